// Herald's /mcp endpoint against the official TypeScript SDK client (@modelcontextprotocol/sdk):
// first with the sandbox API key as a bearer header, then with OAuth, the consent given headlessly
// by a client holding the demo user's dashboard session.
//
// Environment: HERALD_URL (base URL), HERALD_KEY (sandbox API key), HERALD_EMAIL and
// HERALD_PASSWORD (the sandbox user's dashboard sign-in). Exits non-zero on the first failure.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { Browser, consent, signIn } from "./consent.mjs";

const base = need("HERALD_URL");
const key = need("HERALD_KEY");
const email = need("HERALD_EMAIL");
const password = need("HERALD_PASSWORD");
const mcpURL = new URL(base + "/mcp");

function need(name) {
  const v = process.env[name];
  if (!v) fail(`${name} is not set`);
  return v;
}

function fail(msg) {
  console.error(`FAIL: ${msg}`);
  process.exit(1);
}

function check(cond, msg, detail) {
  if (!cond) fail(`${msg}${detail === undefined ? "" : `: ${typeof detail === "string" ? detail : JSON.stringify(detail)}`}`);
  console.log(`  ok  ${msg}`);
}

// callJSON calls a tool and returns its JSON answer (the text content), failing on a tool error.
async function callJSON(client, name, args = {}) {
  const res = await client.callTool({ name, arguments: args });
  const text = (res.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");
  if (res.isError) fail(`${name} answered an error: ${text}`);
  try {
    return res.structuredContent ?? JSON.parse(text);
  } catch {
    fail(`${name} did not answer JSON: ${text}`);
  }
}

// --- 1. API key as a bearer header -------------------------------------------------------------
async function withKey() {
  console.log(`SDK client, API key: ${mcpURL}`);
  const client = new Client({ name: "herald-e2e-sdk-key", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(mcpURL, {
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
  });
  await client.connect(transport);
  check(client.getServerVersion()?.name, "initialize", client.getServerVersion());
  console.log(`      server ${JSON.stringify(client.getServerVersion())}, protocol ${transport.protocolVersion ?? "?"}`);

  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  for (const want of ["whoami", "list_accounts", "create_draft"]) {
    check(names.includes(want), `tools/list names ${want}`, names);
  }
  console.log(`      ${tools.length} tools: ${names.join(", ")}`);

  const me = await callJSON(client, "whoami");
  check(me.email === email, `whoami is ${email}`, me);

  const accts = await callJSON(client, "list_accounts");
  const data = accts.accounts ?? [];
  check(Array.isArray(data) && data.length > 0, `list_accounts lists the sandbox accounts (${data.length})`, accts);

  const draft = await callJSON(client, "create_draft", {
    content: "drafted by the official TypeScript SDK client",
    accounts: [data[0].account_id],
  });
  check(typeof draft.post_id === "string" && draft.post_id !== "", `create_draft made draft ${draft.post_id}`, draft);
  await client.close();
}

// --- 2. OAuth ----------------------------------------------------------------------------------

// An OAuthClientProvider kept in memory: registration, PKCE verifier and tokens live here, and
// redirectToAuthorization is the user's browser.
class HeadlessProvider {
  constructor(browser, redirectURL, name, authMethod) {
    this.browser = browser;
    this.redirect = redirectURL;
    this.name = name;
    this.authMethod = authMethod;
    this.info = undefined;
    this.tok = undefined;
    this.verifier = undefined;
    this.authURL = undefined;
    this.result = undefined;
  }
  get redirectUrl() {
    return this.redirect;
  }
  get clientMetadata() {
    return {
      client_name: this.name,
      redirect_uris: [this.redirect],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: this.authMethod,
    };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info) {
    this.info = info;
  }
  tokens() {
    return this.tok;
  }
  saveTokens(tokens) {
    this.tok = tokens;
  }
  saveCodeVerifier(v) {
    this.verifier = v;
  }
  codeVerifier() {
    if (!this.verifier) throw new Error("no code verifier saved");
    return this.verifier;
  }
  async redirectToAuthorization(url) {
    this.authURL = new URL(url);
    this.result = await consent(this.browser, base, this.authURL, this.redirect, check);
  }
}

// withOAuth runs the flow with a registration of authMethod to redirectURL (nothing listens
// there: the consent's redirect is read from its Location header); it returns the client id.
async function withOAuth(name, redirectURL, authMethod) {
  console.log(`SDK client, OAuth (${authMethod}): ${mcpURL}`);
  const browser = await signIn(base, email, password, check);
  const provider = new HeadlessProvider(browser, redirectURL, name, authMethod);

  let client = new Client({ name: "herald-e2e-sdk-oauth", version: "1.0.0" });
  let transport = new StreamableHTTPClientTransport(mcpURL, { authProvider: provider });
  let unauthorized = false;
  try {
    await client.connect(transport);
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e;
    unauthorized = true;
  }
  check(unauthorized, "without a token the SDK is sent to authorize (401, discovery, registration)");
  check(provider.info?.client_id?.startsWith("hcl_"), `registered dynamically as ${provider.info?.client_id}`, provider.info);
  check(provider.info?.token_endpoint_auth_method === "none" && provider.info?.client_secret === undefined,
    `registered as a public client (asked ${authMethod}, answered none, no secret)`, provider.info);
  const q = provider.authURL.searchParams;
  check(q.get("code_challenge_method") === "S256", "authorization request uses PKCE S256", q.toString());
  check(q.get("resource") === mcpURL.href, `authorization request names resource ${q.get("resource")}`, q.toString());
  console.log(`      scope requested: ${q.get("scope")}`);
  check(provider.result?.code, "consent approved, code received", provider.result);

  await transport.finishAuth(provider.result.code);
  check(provider.tok?.access_token && provider.tok?.refresh_token, `token exchange: access and refresh tokens (scope "${provider.tok?.scope}")`, provider.tok);

  client = new Client({ name: "herald-e2e-sdk-oauth", version: "1.0.0" });
  transport = new StreamableHTTPClientTransport(mcpURL, { authProvider: provider });
  await client.connect(transport);
  const me = await callJSON(client, "whoami");
  check(me.email === email, `whoami over OAuth is ${email}`, me);
  const accts = await callJSON(client, "list_accounts");
  check((accts.accounts ?? []).length > 0, `list_accounts over OAuth (${(accts.accounts ?? []).length})`, accts);
  await client.close();
  return provider.info.client_id;
}

try {
  await withKey();
  await withOAuth("Herald e2e (TypeScript SDK)", "http://127.0.0.1:1/callback", "none");
  // As claude.ai registers: client_secret_post, an https callback. Registering the same metadata
  // again (a host does on every authorization) is handed the same client.
  const claude = "https://claude.ai/api/mcp/auth_callback";
  const first = await withOAuth("Herald e2e (claude.ai-style)", claude, "client_secret_post");
  const again = await withOAuth("Herald e2e (claude.ai-style)", claude, "client_secret_post");
  check(first === again, `an identical registration is handed the same client (${again})`, { first, again });
  console.log("SDK client: all checks passed");
} catch (e) {
  fail(e?.stack ?? String(e));
}
