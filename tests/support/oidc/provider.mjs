// A real OAuth 2.1 authorization server for the tests: the certified
// oidc-provider (tests/peers), configured the way an MCP deployment needs it.
//
//   node provider.mjs --jwks FILE [--port N] [--issuer URL]
//
// It listens on 127.0.0.1:N (a free port without --port), prints
// "READY <issuer>" once it does, and offers:
// * PKCE, S256 only and required of every client; dynamic client registration
//   (RFC 7591); resource indicators (RFC 8707) issuing access tokens whose aud
//   is the resource; refresh tokens (offline_access, rotated); client
//   credentials; token introspection (RFC 7662); the iss authorization
//   response parameter (RFC 9207);
// * resource servers registered at run time by the tests, each with its
//   scopes, token lifetime and token format (JWT or opaque):
//   POST /test/resources {"resource", "scope", "ttl"?, "format"?};
// * an interaction that needs no person: /interaction/<uid> logs in the user
//   named by the authorization request's login_hint (default "alice") and
//   grants what the request asks for, so a test can follow the authorization
//   URL with plain HTTP requests and get the code at the redirect.

import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';

// The package pinned in tests/peers (ESM resolves no NODE_PATH: by its path).
import Provider, { errors } from '../../peers/node_modules/oidc-provider/lib/index.js';

const { values: args } = parseArgs({
  options: {
    port: { type: 'string' },
    jwks: { type: 'string' },
    issuer: { type: 'string' },
  },
});
const jwks = JSON.parse(readFileSync(args.jwks, 'utf8'));
const resources = new Map(); // resource indicator -> resource server info

function configure(issuer) {
  return new Provider(issuer, {
    jwks,
    // Throwaway keys for cookies: the provider lives as long as one test module.
    cookies: { keys: [crypto.randomUUID()] },
    scopes: ['openid', 'offline_access'],
    claims: { openid: ['sub'] },
    pkce: { required: () => true },
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        // A token request may leave out the resource its grant names.
        useGrantedResource: async () => true,
        getResourceServerInfo: async (ctx, indicator) => {
          const info = resources.get(indicator);
          if (info === undefined) {
            throw new errors.InvalidTarget(`unknown resource ${indicator}`);
          }
          return info;
        },
      },
    },
    async findAccount(ctx, id) {
      return { accountId: id, async claims() { return { sub: id }; } };
    },
    // A refresh token for every client registered with the refresh_token
    // grant: MCP clients ask for one through grant_types (offline_access is
    // offered too, but OpenID Connect keeps it for prompt=consent requests).
    // Refresh tokens rotate on each use.
    async issueRefreshToken(ctx, client) {
      return client.grantTypeAllowed('refresh_token');
    },
    rotateRefreshToken: true,
    ttl: {
      AccessToken: (ctx, token) => token.resourceServer?.accessTokenTTL ?? 300,
      ClientCredentials: (ctx, token) => token.resourceServer?.accessTokenTTL ?? 300,
      AuthorizationCode: 60,
      Grant: 3600,
      Interaction: 300,
      RefreshToken: 3600,
      Session: 3600,
    },
    renderError(ctx, out) {
      ctx.type = 'application/json';
      ctx.body = out;
    },
  });
}

async function readJson(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
}

function reply(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

async function registerResource(req, res) {
  const { resource, scope, ttl, format } = await readJson(req);
  if (typeof resource !== 'string' || typeof scope !== 'string') {
    reply(res, 400, { error: 'resource and scope are required' });
    return;
  }
  const jwt = (format ?? 'jwt') === 'jwt';
  resources.set(resource, {
    scope,
    accessTokenTTL: ttl ?? 300,
    accessTokenFormat: jwt ? 'jwt' : 'opaque',
    ...(jwt ? { jwt: { sign: { alg: 'RS256' } } } : {}),
  });
  reply(res, 201, { resource });
}

// Completes whichever prompt the provider asks for: login, then consent.
async function interact(req, res) {
  const details = await provider.interactionDetails(req, res);
  const { prompt, params, session } = details;
  if (prompt.name === 'login') {
    const accountId = params.login_hint || 'alice';
    await provider.interactionFinished(req, res, { login: { accountId } }, { mergeWithLastSubmission: false });
    return;
  }
  const grant = details.grantId
    ? await provider.Grant.find(details.grantId)
    : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  const missing = prompt.details;
  if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
  if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
  for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {})) {
    grant.addResourceScope(indicator, scopes.join(' '));
  }
  const grantId = await grant.save();
  const consent = details.grantId ? {} : { grantId };
  await provider.interactionFinished(req, res, { consent }, { mergeWithLastSubmission: true });
}

let issuer;
let provider;
let callback;
const server = createServer(async (req, res) => {
  const { pathname } = new URL(req.url, issuer);
  try {
    if (pathname === '/test/resources' && req.method === 'POST') {
      await registerResource(req, res);
    } else if (pathname === '/reg' && req.method === 'POST') {
      // This server's policy (RFC 7591 lets it replace what a client asks
      // for): the scope member of a registration is ignored, what a client
      // may ask for is decided per resource server. Otherwise oidc-provider
      // would refuse resource scopes there, or, made static, hold a client
      // to the scopes it registered, and step-up could never widen them.
      const metadata = await readJson(req);
      delete metadata.scope;
      req.body = JSON.stringify(metadata); // oidc-provider reads a body parsed upstream
      callback(req, res);
    } else if (pathname.startsWith('/interaction/')) {
      await interact(req, res);
    } else {
      callback(req, res);
    }
  } catch (error) {
    reply(res, 500, { error: 'server_error', error_description: String(error) });
  }
});

// The issuer names the port, so the provider is made once the port is bound.
server.listen(Number(args.port ?? 0), '127.0.0.1', () => {
  issuer = args.issuer ?? `http://127.0.0.1:${server.address().port}`;
  provider = configure(issuer);
  callback = provider.callback();
  process.stdout.write(`READY ${issuer}\n`);
});

function stop() {
  server.close();
  server.closeAllConnections();
  process.exit(0);
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
