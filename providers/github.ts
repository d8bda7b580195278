// GitHub's REST API (and its GraphQL endpoint), for agents that read and change repositories:
// https://docs.github.com/en/rest. A tool API (kind 'tool'): no models, no prices; each request counts once.
import type { ProviderPlugin, ProviderRoute } from '@keyward/sdk';

const REPO = 'repos/{owner}/{repo}';
const routes = (methods: readonly ProviderRoute['method'][], path: string): ProviderRoute[] => methods.map((method) => ({ method, path }));

// A file's path in a repository has slashes; a route parameter is one segment, so contents are reached to 8 levels deep.
const contents = Array.from({ length: 8 }, (_, depth) => `${REPO}/contents/${Array.from({ length: depth + 1 }, (_, i) => `{p${i}}`).join('/')}`);

export default {
  apiVersion: 1,
  id: 'github',
  kind: 'tool',
  name: 'GitHub REST API',
  sdk: [
    { name: 'Octokit, the GitHub Actions toolkit and scripts that read GITHUB_API_URL', env: { GITHUB_API_URL: '{proxy}', GITHUB_TOKEN: '{token}', GH_TOKEN: '{token}' } },
    { name: 'curl or any HTTP client', code: 'curl -H "Authorization: Bearer {token}" {proxy}/user', note: 'The token also works as "Authorization: token …", as gh and Octokit send it.' },
  ],
  upstream: 'https://api.github.com',
  credential: {
    fields: {
      api_key: { secret: true, main: true, label: 'Personal access token', help: 'A fine-grained personal access token (github_pat_…) or a classic one (ghp_…) from GitHub, Settings, Developer settings.' },
    },
  },
  auth: { kind: 'header', header: 'authorization' }, // Bearer <token>
  // Octokit and gh send `Authorization: token <key>`; curl users send Bearer.
  tokenIn: [{ header: 'authorization', pattern: /^(?:bearer|token) (\S+)$/i }],
  routes: [
    ...routes(['GET'], 'user'), ...routes(['GET'], 'user/repos'), ...routes(['GET'], 'user/orgs'), ...routes(['GET'], 'rate_limit'),
    ...routes(['GET'], 'users/{username}'), ...routes(['GET'], 'users/{username}/repos'),
    ...routes(['GET'], 'orgs/{org}'), ...routes(['GET'], 'orgs/{org}/repos'),
    ...routes(['GET'], 'notifications'),
    ...['code', 'commits', 'issues', 'repositories', 'users', 'topics', 'labels'].flatMap((s) => routes(['GET'], `search/${s}`)),
    ...routes(['POST'], 'graphql'),
    ...routes(['GET'], REPO),
    ...routes(['GET'], `${REPO}/readme`), ...routes(['GET'], `${REPO}/languages`), ...routes(['GET'], `${REPO}/contributors`), ...routes(['GET'], `${REPO}/tags`),
    ...routes(['GET'], `${REPO}/branches`), ...routes(['GET'], `${REPO}/branches/{branch}`),
    ...routes(['GET'], `${REPO}/commits`), ...routes(['GET'], `${REPO}/commits/{ref}`),
    ...routes(['GET'], `${REPO}/commits/{ref}/status`), ...routes(['GET'], `${REPO}/commits/{ref}/check-runs`),
    ...routes(['GET'], `${REPO}/compare/{basehead}`),
    ...contents.flatMap((p) => routes(['GET', 'PUT', 'DELETE'], p)),
    ...routes(['GET'], `${REPO}/git/trees/{tree_sha}`), ...routes(['GET'], `${REPO}/git/refs/heads/{branch}`), ...routes(['POST'], `${REPO}/git/refs`),
    ...routes(['GET', 'POST'], `${REPO}/issues`), ...routes(['GET', 'PATCH'], `${REPO}/issues/{issue_number}`),
    ...routes(['GET', 'POST'], `${REPO}/issues/{issue_number}/comments`), ...routes(['GET', 'POST'], `${REPO}/issues/{issue_number}/labels`),
    ...routes(['GET', 'PATCH', 'DELETE'], `${REPO}/issues/comments/{comment_id}`), ...routes(['GET'], `${REPO}/labels`),
    ...routes(['GET', 'POST'], `${REPO}/pulls`), ...routes(['GET', 'PATCH'], `${REPO}/pulls/{pull_number}`),
    ...routes(['GET'], `${REPO}/pulls/{pull_number}/files`), ...routes(['GET'], `${REPO}/pulls/{pull_number}/commits`),
    ...routes(['GET', 'PUT'], `${REPO}/pulls/{pull_number}/merge`), ...routes(['GET', 'POST'], `${REPO}/pulls/{pull_number}/reviews`),
    ...routes(['GET', 'POST'], `${REPO}/pulls/{pull_number}/comments`), ...routes(['GET', 'POST', 'DELETE'], `${REPO}/pulls/{pull_number}/requested_reviewers`),
    ...routes(['GET'], `${REPO}/actions/runs`), ...routes(['GET'], `${REPO}/actions/runs/{run_id}`), ...routes(['GET'], `${REPO}/actions/runs/{run_id}/jobs`),
    ...routes(['POST'], `${REPO}/actions/runs/{run_id}/rerun`), ...routes(['GET'], `${REPO}/actions/jobs/{job_id}/logs`),
    ...routes(['GET'], `${REPO}/actions/workflows`), ...routes(['POST'], `${REPO}/actions/workflows/{workflow_id}/dispatches`),
    ...routes(['GET', 'POST'], `${REPO}/releases`), ...routes(['GET'], `${REPO}/releases/latest`), ...routes(['GET'], `${REPO}/releases/tags/{tag}`),
  ],
} satisfies ProviderPlugin;
