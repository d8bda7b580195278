// Hugging Face's remote MCP server (Streamable HTTP): https://huggingface.co/settings/mcp, endpoint
// https://huggingface.co/mcp; an MCP client's URL is <gateway>/v1/proxy/mcp. A token's `tools` scope names the
// tools it may call (docs/agents/tools.md). KEYWARD_UPSTREAM_HUGGINGFACE_MCP overrides its origin.
import type { ProviderPlugin } from '@keyward/sdk';

export default {
  apiVersion: 1,
  id: 'huggingface-mcp',
  kind: 'mcp',
  name: 'Hugging Face MCP server',
  sdk: [{
    name: 'MCP clients (Claude Code, VS Code, Cursor, the MCP SDKs)',
    code: '{"mcpServers": {"hf": {"type": "http", "url": "{proxy}/mcp", "headers": {"Authorization": "Bearer {token}"}}}}',
  }],
  upstream: 'https://huggingface.co',
  credential: { fields: { api_key: { secret: true, main: true, label: 'Access token', help: 'A Hugging Face user access token from huggingface.co, Settings, Access Tokens. It starts with hf_.' } } },
  auth: { kind: 'header', header: 'authorization' }, // Bearer <token>
  tokenIn: [{ header: 'authorization', scheme: 'Bearer' }],
  routes: (['POST', 'GET', 'DELETE'] as const).map((method) => ({ method, path: 'mcp' })),
} satisfies ProviderPlugin;
