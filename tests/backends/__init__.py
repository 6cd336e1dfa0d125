"""Database backends a site could name that nr_llm cannot serve, for the E060/E061 checks:
SQLite underneath, each changed in the one way the check must notice."""
