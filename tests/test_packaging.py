"""The package's metadata is ready to publish, checked on every run (the built wheel itself is
.ci/run's: .ci/check_wheel.py)."""

from __future__ import annotations

import subprocess
import sys
import tomllib

import nr_llm
from tests.peers import ROOT


def test_the_version_is_written_once_and_the_changelog_and_readme_follow_it():
    """pyproject.toml takes its version from nr_llm.__version__ (no second copy); CHANGELOG.md has a
    section for it; the README's install line names the wheel of that version."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "nr_llm.__version__"}
    version = nr_llm.__version__
    assert f"\n## {version} " in (ROOT / "CHANGELOG.md").read_text()
    assert f"python -m pip install dist/nr_llm-{version}-py3-none-any.whl" in (ROOT / "README.md").read_text()


def test_the_classifiers_name_the_python_and_django_versions_ci_runs():
    """Python 3.11-3.13 and Django 5.2 and 6.0; no project URL that points at another project."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    classifiers = set(project["classifiers"])
    for minor in (11, 12, 13):
        assert f"Programming Language :: Python :: 3.{minor}" in classifiers
    assert {"Framework :: Django :: 5.2", "Framework :: Django :: 6.0"} <= classifiers
    # The URLs it carried named a TYPO3 extension (t3x-nr-llm): none until it has its own.
    assert "urls" not in project


def test_ci_reads_the_two_install_lines_from_the_readme():
    """.ci/readme_install.py prints the README's build and install lines, which .ci/run runs."""
    done = subprocess.run(
        [sys.executable, ".ci/readme_install.py"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "python -m pip wheel --no-deps -w dist .",
        f"python -m pip install dist/nr_llm-{nr_llm.__version__}-py3-none-any.whl",
    ]
