// Package persistence is Herald's bbolt store: the bucket tree, key encodings, record codecs,
// indexes and the group committer. It is the only package that imports bbolt.
//
// The bucket tree (all keys big-endian and fixed width; ids are 16-byte UUIDv7, so keys sort by
// creation time):
//
//	meta            "schema" → version
//	users           user id → User (JSON)
//	users_email     lower-cased e-mail → user id
//	apikeys         key id → APIKey (JSON; the secret itself is never stored, only its SHA-256)
//	apikeys_hash    SHA-256 of the raw key (32) → key id; removed when the key is revoked
//	apikeys_user    user id | key id → empty
//	accounts        account id → Account (JSON, tokens encrypted by the caller)
//	accounts_user   user id | account id → empty
//	posts           post id → Post (JSON)
//	posts_user      user id | post id → status (1 byte)
//	posts_status    user id | status (1 byte) | post id → empty
//	posts_platform  user id | platform (1 byte) | post id → empty
//
// Writes go through Store.Update, which group-commits: the writes of many callers that arrive
// while a commit is running share the next transaction and its single fsync, and every caller
// returns only once its write is durable. Reads use Store.View and never hold a transaction across
// I/O. Values read in a transaction are decoded (copied) before it ends.
package persistence
