// Preload (`node -r ./loopback.cjs ...`) that pins any Node server to 127.0.0.1 on an
// OS-chosen port, whatever host and port the program asks for, and announces the port
// as `PORT <n>` on stdout for tests/peers.running(). server-everything would otherwise
// listen on all interfaces on a fixed port.
"use strict";
const net = require("node:net");

const listen = net.Server.prototype.listen;
let announced = false;
net.Server.prototype.listen = function (...args) {
  const callback = typeof args[args.length - 1] === "function" ? args[args.length - 1] : undefined;
  this.once("listening", () => {
    if (!announced) {
      announced = true;
      process.stdout.write(`PORT ${this.address().port}\n`);
    }
  });
  return listen.call(this, { host: "127.0.0.1", port: 0 }, callback);
};

// The peer logs every request to stdout; nobody drains that pipe after the port is read,
// and a full pipe would block the server. Its errors still go to stderr.
console.log = () => {};
console.info = () => {};
