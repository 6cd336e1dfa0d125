// Preload (`node -r ./loopback.cjs --import ./grow.mjs .../server-everything/dist/index.js
// streamableHttp`): SIGUSR2 deploys a new tool, `deployed_later`, on server-everything, as
// its owner would: every live session's server registers it (the SDK then announces
// notifications/tools/list_changed on that session's GET stream) and every later session
// starts with it.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";

const servers = new Set();
let deployed = false;

function deploy(server) {
  server.registerTool(
    "deployed_later",
    { description: "A tool deployed after the server started." },
    async () => ({ content: [{ type: "text", text: "deployed" }] }),
  );
}

const connect = McpServer.prototype.connect;
McpServer.prototype.connect = async function (transport) {
  servers.add(this);
  if (deployed) deploy(this);
  return connect.call(this, transport);
};

process.on("SIGUSR2", () => {
  deployed = true;
  for (const server of servers) {
    try {
      deploy(server);
    } catch {
      // A closed session's server: nothing to tell.
    }
  }
});
