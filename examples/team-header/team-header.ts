/**
 * team-header: every proxied request names its team in `X-Team` (one of the teams the operator lists); the
 * team is sent back on the response as `X-Keyward-Team` and written to the request's log line. A request with no
 * team, or one not listed, is refused with 400 `team_required` before anything goes upstream.
 *
 * KEYWARD_PLUGIN_CONFIG: { "team-header": { "teams": ["search", "ads"], "required": true } }
 */
import type { MiddlewarePlugin } from '@keyward/sdk';

interface Settings {
  teams: string[];
  required: boolean;
}

interface State {
  team: string | undefined;
}

const teamHeader = {
  apiVersion: 1,
  name: 'team-header',
  priority: 450,
  configSchema: (Type) => Type.Object({
    teams: Type.Array(Type.String({ pattern: '^[a-z0-9][a-z0-9-]{0,39}$' }), { minItems: 1 }),
    required: Type.Boolean({ default: true }),
  }),
  create(host, settings) {
    const teams = new Set(settings.teams);
    return {
      access(ctx) {
        const header = ctx.headers['x-team'];
        const team = typeof header === 'string' ? header.trim().toLowerCase() : undefined;
        if (team !== undefined && teams.has(team)) {
          ctx.state.team = team;
          return;
        }
        if (settings.required) {
          throw new host.GatewayError(400, 'invalid_request', 'team_required', `Name your team in X-Team: one of ${[...teams].join(', ')}.`, {}, 'x-team');
        }
      },
      responseHead(ctx, head) {
        if (ctx.state.team !== undefined) head.setHeader('x-keyward-team', ctx.state.team);
      },
      log(ctx) {
        if (ctx.state.team !== undefined) host.logger.info({ team: ctx.state.team, request_id: ctx.requestId, status: ctx.status, spent_micros: ctx.spentMicros }, 'team request');
      },
    };
  },
} satisfies MiddlewarePlugin<State, Settings>;

export default teamHeader;
