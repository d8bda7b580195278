// GitHub's remote MCP server (Streamable HTTP): https://github.com/github/github-mcp-server/blob/main/docs/remote-server.md.
// Its endpoint is https://api.githubcopilot.com/mcp/ (and /mcp/readonly, /mcp/x/<toolset>, /mcp/x/<toolset>/readonly), so
// an MCP client's URL is <gateway>/v1/proxy/mcp/. A token's `tools` scope names the tools it may call (docs/agents/tools.md).
// KEYWARD_UPSTREAM_GITHUB_MCP overrides its origin (a `-` in an id is `_` in the variable).
import type { ProviderPlugin } from '@keyward/sdk';

const paths = ['mcp', 'mcp/', 'mcp/readonly', 'mcp/x/{toolset}', 'mcp/x/{toolset}/readonly'];

export default {
  apiVersion: 1,
  id: 'github-mcp',
  kind: 'mcp',
  name: 'GitHub MCP server',
  sdk: [{
    name: 'MCP clients (Claude Code, VS Code, Cursor, the MCP SDKs)',
    code: '{"mcpServers": {"github": {"type": "http", "url": "{proxy}/mcp/", "headers": {"Authorization": "Bearer {token}"}}}}',
    note: 'Any client of the Streamable HTTP transport works: the proxy token is its bearer token.',
  }],
  upstream: 'https://api.githubcopilot.com',
  credential: {
    fields: {
      api_key: { secret: true, main: true, label: 'Personal access token', help: 'A GitHub personal access token (github_pat_… or ghp_…) with the scopes the tools need.' },
    },
  },
  auth: { kind: 'header', header: 'authorization' }, // Bearer <token>
  tokenIn: [{ header: 'authorization', scheme: 'Bearer' }],
  // Streamable HTTP: POST carries JSON-RPC, GET opens the server's event stream, DELETE ends the session.
  // Keyward's own MCP route for a credential, /v1/mcp/<credential id>, goes to the endpoint GitHub documents.
  mcpEndpoint: 'mcp/',
  routes: paths.flatMap((path) => (['POST', 'GET', 'DELETE'] as const).map((method) => ({ method, path }))),
} satisfies ProviderPlugin;
