// Preload (`node -r ./request_log.cjs ...`) that appends the JSON-RPC method of every POST a
// Node server receives to the file named by MCP_REQUEST_LOG, one JSON line each: the server's
// own request log, which proves what it was sent (a tools/call once, however often polled).
// It observes the request stream's "data" events without consuming them, so the server reads
// its bodies as before.
"use strict";
const fs = require("node:fs");
const http = require("node:http");

const file = process.env.MCP_REQUEST_LOG;
const emit = http.IncomingMessage.prototype.emit;
http.IncomingMessage.prototype.emit = function (event, ...args) {
  if (file && this.method === "POST") {
    if (event === "data") {
      (this.__logged ||= []).push(Buffer.from(args[0]));
    } else if (event === "end" && this.__logged) {
      const text = Buffer.concat(this.__logged).toString("utf8");
      this.__logged = undefined;
      try {
        for (const message of [].concat(JSON.parse(text))) {
          const line = { method: message.method ?? null, session: this.headers["mcp-session-id"] ?? null };
          fs.appendFileSync(file, JSON.stringify(line) + "\n");
        }
      } catch {
        fs.appendFileSync(file, JSON.stringify({ method: null, unreadable: true }) + "\n");
      }
    }
  }
  return emit.call(this, event, ...args);
};
