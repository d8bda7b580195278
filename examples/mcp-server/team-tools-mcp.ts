/**
 * A remote MCP server of your own (Streamable HTTP) behind Keyward: its access token stays in Keyward's vault, and
 * each agent gets a proxy token whose `tools` scope names the tools it may call. Its `sdk` block is what the
 * console shows after minting: an `mcpServers` entry to paste into an MCP client's settings.
 * Point KEYWARD_PROVIDERS_DIR at this folder (KEYWARD_UPSTREAM_TEAM_TOOLS_MCP overrides the origin).
 */
import type { ProviderPlugin } from '@keyward/sdk';

export default {
  apiVersion: 1,
  id: 'team-tools-mcp',
  kind: 'mcp',
  name: 'Team tools (MCP server)',
  upstream: 'https://mcp.team-tools.example',
  credential: { fields: { api_key: { secret: true, main: true, label: 'Access token', help: 'The bearer token your MCP server accepts.' } } },
  auth: { kind: 'header', header: 'authorization' }, // Bearer <token>
  tokenIn: [{ header: 'authorization', scheme: 'Bearer' }],
  // Streamable HTTP: POST for messages, GET for the server's event stream, DELETE to end a session.
  routes: (['POST', 'GET', 'DELETE'] as const).map((method) => ({ method, path: 'mcp' })),
  sdk: [{
    name: 'MCP clients (Claude Code, VS Code, Cursor, the MCP SDKs)',
    code: '{"mcpServers": {"team-tools": {"type": "http", "url": "{proxy}/mcp", "headers": {"Authorization": "Bearer {token}"}}}}',
  }],
} satisfies ProviderPlugin;
