// Package persistence is Herald's store: the bucket tree, key encodings, record codecs, indexes
// and the group committer, over bbolt (the default: one file in the data directory) or PostgreSQL
// (postgres.go: one table per bucket). Every typed accessor reads and writes buckets through a
// small key-value seam (kv.go) that both backends implement. It is the only package that imports
// bbolt or a PostgreSQL driver.
//
// The bucket tree (all keys big-endian and fixed width; ids are 16-byte UUIDv7, so keys sort by
// creation time):
//
//	meta            "schema" → version; "probe" → time of the last probe write (Store.Probe)
//	users           user id → User (JSON)
//	users_email     lower-cased e-mail → user id
//	apikeys         key id → APIKey (JSON; the secret itself is never stored, only its SHA-256)
//	apikeys_hash    SHA-256 of the raw key (32) → key id; kept when the key is revoked (so it is
//	                refused as revoked), replaced when it is regenerated
//	apikeys_user    user id | key id → empty
//	accounts        account id → Account (JSON, tokens encrypted by the caller)
//	accounts_user   workspace | account id → platform code (1 byte), then 1 when the account has
//	                default options; "workspace" in these indexes is the workspace's scope
//	                (workspaces.go): the user's id for the main workspace, else the workspace's id
//	posts           post id → Post (JSON)
//	posts_user      workspace | post id → summary: status code (1 byte) | platform bit set (2 bytes)
//	posts_count     workspace → posts per status and platform (8 × 16 uint32 cells; postcounts.go)
//	publications    publication id → post id | target index (2): the publications of published
//	                targets (publication ids are derived from post id and target: publications.go)
//	webhooks        webhook id → Webhook (JSON; the signing secret sealed when a sealer is set)
//	webhooks_user   workspace | webhook id → flags (1 byte): event bits, 0x80 = active
//	deliveries      webhook id | delivery id → Delivery (JSON)
//	deliveries_pending webhook id | delivery id → next attempt (8 bytes, Unix ns)
//	attempts        job id | target (2 bytes) → Attempt (JSON): a network call in flight
//	media           media id → Media (JSON): pending after presign, confirmed after confirm
//	media_key       storage key "uploads/{user id}/{storage filename}" (string) → media id
//	media_user      workspace | media id → empty
//	media_pending   presign time (8, Unix ns) | media id → empty; unconfirmed media only
//	media_orphans   storage key (string) → empty: bytes of a deleted record (its upload, its
//	                derived JPEG) still to delete
//	connect_states  state id → ConnectState (JSON): a browser connect flow in progress, marked
//	                used by its callback, purged once expired
//	connect_links   link id → ConnectLink (JSON): a link a client connects an account to a
//	                workspace with; connect_links_hash (SHA-256 of its secret → link id) finds
//	                it, connect_links_scope (workspace | link id → empty) lists a workspace's;
//	                herald check checks both name links that exist
//	user_passwords  user id → the password's argon2id hash, PHC string form
//	                ("$argon2id$v=19$m=…,t=…,p=…$salt$hash"); apart from users, so that no user
//	                record printed or served can carry it
//	sessions        SHA-256 of the session token (32) → Session (JSON: user id, created, last
//	                seen, CSRF token); the token itself is never stored
//	sessions_user   user id | SHA-256 of the token → empty: a user's sessions (a password change
//	                ends them)
//	oauth_clients   client id (string) → OAuthClient (JSON): a registered OAuth client (RFC 7591)
//	oauth_clients_meta SHA-256 of a client's name and redirect URIs (32) → client id: an identical
//	                registration is handed the client it made before
//	oauth_codes     SHA-256 of the authorization code (32) → OAuthCode (JSON): single use, 60 s
//	oauth_grants    key id (16) → OAuthGrant (JSON: user, client, resource, scopes, workspace): an
//	                approval, backed by the connector API key of the same id (apikeys, kind
//	                "connector"), which is bound to the grant's workspace
//	oauth_tokens    SHA-256 of the token (32) → OAuthToken (JSON: access or refresh, key id,
//	                expiry, rotated, the rotation's successor pair sealed): the token itself is
//	                never stored
//	jobs            tracking id → Job (JSON)
//	jobs_active     tracking id → empty, or 1 once the job is finished: jobs whose post has not
//	                taken their outcome (resumed at start-up)
//	jobs_waiting    account id | tracking id | target (2) → empty: the targets of active jobs whose
//	                outcome is not stored, in the order their account takes them (waiting.go)
//	jobs_post       post id | tracking id → empty
//	job_events      tracking id | seq (8) → []JobEvent (JSON): the targets' timeline (jobevents.go)
//	schedule        due time (8, Unix ns) | post id → empty
//	idempotency     SHA-256 of user | route | Idempotency-Key → IdempotencyRecord (JSON)
//	quota           user id | "YYYY-MM" → posts counted (8 bytes)
//	campaigns       campaign id → Campaign (JSON): posts submitted together (campaigns.go)
//	campaigns_user  workspace | campaign id → empty
//	campaign_posts  campaign id | post id → the post's status code (1 byte), kept by PutPost
//	campaign_counts campaign id → its posts per status (7 × uint32), kept by PutPost
//	campaign_events campaign id | seq (8) → CampaignEvent (JSON): every target's steps, in order
//	events          event id → Event (JSON): the outbox of post lifecycle events
//	event_cursors   consumer name → id of the last event it took
//	workspaces      workspace (16) → Workspace (JSON); main's under the user's id, once changed
//	workspaces_user user id | workspace id → empty: a user's workspaces besides main
//	members         member's user id → Member (JSON: owner, role, workspaces): a person of an
//	                owner's team, a user of their own whose session acts for the owner (members.go)
//	members_owner   owner's user id | member's user id → empty
//	invitations     invitation id → Invitation (JSON): single use, expiring; the token is never
//	                stored
//	invitations_hash SHA-256 of the invitation token (32) → invitation id
//	invitations_owner owner's user id | invitation id → empty
//
// Status codes are 1 + the index in PostStatuses; platform codes 1..9 as in platformCodes. A list
// walks posts_user backwards and filters on the summaries, so only the page itself (or, with a
// search, the candidates) is decoded; its total comes from posts_count, kept in the same
// transactions, so that only a search walks the whole index. meta's "schema" is the layout
// version (2: posts_count, 3: revoked keys kept in apikeys_hash, 4: publications, 5: jobs_waiting and
// the finished flag of jobs_active, 6: workspaces, which rewrites nothing: the indexes once keyed by user id
// are keyed by workspace, and a user's id is the key of the main workspace that holds all earlier data); a store of an earlier layout is brought up to date when opened. Buckets that
// start empty (user_passwords, sessions, sessions_user, the oauth_ buckets) are created when the store opens and need
// no new layout version.
//
// A damaged file is refused, never run on: Open reads the file's structure with plain reads
// before bbolt maps it (the meta pages, the high-water mark against the file's size, the
// freelist, every bucket's root page; with Options.Check every page, bbolt's consistency check
// and Herald's cross-checks of indexes against records) and returns a *DamagedError;
// CheckFile runs the full check on a file no process writes (damage.go, check.go).
//
// Writes go through Store.Update, which group-commits: the writes of many callers that arrive
// while a commit is running share the next transaction and its single fsync, and every caller
// returns only once its write is durable. When commits run back to back (the last one ended with
// writes waiting) and the next batch is small, the committer lingers for more writes, so that a
// CPU-bound server pays a commit's fixed cost for fuller batches: briefly for a batch that holds
// a write a request waits on (TryUpdate), longer for one of work already accepted alone when the
// batch before held no request's write either (store.go, linger; the bounds are defaultLingers).
// A write that finds the committer idle is committed at once. When a commit fails (disk full, I/O error), every write
// of its batch gets an error wrapping ErrWriteFailed and nothing of it is kept; the store stays
// open and the next commit is tried as usual, so writes succeed again as soon as the storage does.
// Update's and View's transactions go through one commit boundary (faults.go), where the fault
// injector of the tests (Options.Faults) fails commits and reads as a failing disk would. Reads use Store.View and never hold a transaction across
// I/O. Values read in a transaction are decoded (copied) before it ends.
package persistence
