package sim

import "slices"

// selfReply records a reply of the account to one of its own posts (a thread's next part, or a
// first comment) as a post of the account with ReplyTo, listed on its timeline, and with the
// conversation's replies as the account's own (X's recent search finds a thread's parts), with
// the alt texts of its media as a post's. It
// reports false for a reply to another account's post or to a comment, which createTweet records
// as a comment reply.
func (x *xSim) selfReply(id string, u xUser, text string, shas, mediaIDs []string, parent xTweet) bool {
	rec, ok := x.n.OwnPost(parent.id, u.id)
	if !ok {
		return false
	}
	root := x.n.ThreadRoot(rec.ID)
	x.n.PublishReply(id, u.id, text, shas, rec.ID)
	var alts []string
	for _, m := range mediaIDs {
		v, _ := x.n.Store.Get("x-alt:" + m)
		alt, _ := v.(string)
		alts = append(alts, alt)
	}
	if slices.ContainsFunc(alts, func(a string) bool { return a != "" }) {
		x.n.UpdateRecord(id, func(r *Record) { r.AltTexts = alts })
	}
	p := rec.ID
	if p == root {
		p = ""
	}
	x.n.AddAccountComment(Comment{ID: id, PostID: root, ParentID: p, Author: u.handle, AuthorID: u.id, Text: text}, shas)
	return true
}

// replyFields adds to a timeline post that is a reply the fields that say so, when asked for.
func (x *xSim) replyFields(t map[string]any, rec Record, has map[string]bool) {
	if has["conversation_id"] {
		t["conversation_id"] = x.n.ThreadRoot(rec.ID)
	}
	if rec.ReplyTo == "" {
		return
	}
	if has["in_reply_to_user_id"] {
		t["in_reply_to_user_id"] = rec.Account
	}
	if has["referenced_tweets"] {
		t["referenced_tweets"] = []map[string]string{{"type": "replied_to", "id": rec.ReplyTo}}
	}
}
