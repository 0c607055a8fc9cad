// The demo user's browser, headless: a dashboard sign-in into a cookie jar and the approval of
// Herald's OAuth consent page. check(cond, msg, detail) reports each step (and fails on a false cond).

export async function signIn(base, email, password, check) {
  const browser = new Browser();
  const res = await browser.fetch(`${base}/signin`, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded", Origin: base },
    body: new URLSearchParams({ email, password, next: "/" }),
  });
  check(res.status === 303 && browser.cookies.size > 0, `signed in to the dashboard as ${email}`, `${res.status} ${await res.text()}`);
  return browser;
}

// A small cookie jar over fetch: enough for the dashboard session and its CSRF cookie.
export class Browser {
  constructor() {
    this.cookies = new Map();
  }
  async fetch(url, init = {}) {
    const headers = new Headers(init.headers ?? {});
    if (this.cookies.size) headers.set("Cookie", [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; "));
    const res = await fetch(url, { ...init, headers, redirect: "manual" });
    for (const sc of res.headers.getSetCookie()) {
      const [pair] = sc.split(";");
      const i = pair.indexOf("=");
      const name = pair.slice(0, i).trim();
      const value = pair.slice(i + 1).trim();
      if (/max-age=0|expires=thu, 01 jan 1970/i.test(sc) || value === "") this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return res;
  }
}

export function htmlUnescape(s) {
  return s
    .replaceAll("&#34;", '"').replaceAll("&#39;", "'").replaceAll("&#43;", "+")
    .replaceAll("&lt;", "<").replaceAll("&gt;", ">").replaceAll("&amp;", "&");
}

// The signed-in user approving on the consent page: GET the authorization URL with the session,
// post the form's hidden fields back with decision=approve, and read the code from the redirect.
export async function consent(browser, base, authURL, redirectURL, check) {
  const page = await browser.fetch(authURL);
  const html = await page.text();
  if (page.status !== 200) throw new Error(`consent page: ${page.status} ${html.slice(0, 300)}`);
  const form = new URLSearchParams();
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    form.append(m[1], htmlUnescape(m[2]));
  }
  check(form.get("csrf_token"), "consent page carries the form and its csrf_token", html.slice(0, 300));
  form.set("decision", "approve");
  const action = new URL(authURL);
  action.search = "";
  const res = await browser.fetch(action, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded", Origin: base },
    body: form,
  });
  const loc = res.headers.get("Location");
  if (res.status < 300 || res.status > 399 || !loc) throw new Error(`consent: ${res.status} ${await res.text()}`);
  const back = new URL(loc, action);
  check(back.origin + back.pathname === redirectURL, `consent redirects to the client's redirect URI`, loc);
  if (back.searchParams.get("error")) throw new Error(`authorization refused: ${back.searchParams.get("error")}`);
  return { code: back.searchParams.get("code"), state: back.searchParams.get("state"), iss: back.searchParams.get("iss") };
}

// As a command: node consent.mjs AUTHORIZATION_URL prints the redirect (callback) URL with the code,
// for the Inspector's OAuth flow. Environment: HERALD_URL, HERALD_EMAIL, HERALD_PASSWORD.
if (import.meta.url === `file://${process.argv[1]}`) {
  const check = (cond, msg, detail) => {
    if (!cond) {
      console.error(`FAIL: ${msg}: ${typeof detail === "string" ? detail : JSON.stringify(detail)}`);
      process.exit(1);
    }
    console.error(`  ok  ${msg}`);
  };
  try {
    const base = process.env.HERALD_URL;
    const authURL = new URL(process.argv[2]);
    const redirect = authURL.searchParams.get("redirect_uri");
    const browser = await signIn(base, process.env.HERALD_EMAIL, process.env.HERALD_PASSWORD, check);
    const r = await consent(browser, base, authURL, redirect, check);
    const u = new URL(redirect);
    for (const [k, v] of Object.entries(r)) if (v) u.searchParams.set(k, v);
    console.log(u.href);
  } catch (e) {
    console.error(`FAIL: ${e?.stack ?? e}`);
    process.exit(1);
  }
}
