package sim

// selfReply records a reply record that answers one of the account's own posts (a thread's next
// part, or a first comment) as a post of the account with ReplyTo, and lists it with the thread's
// replies (getPostThread) as the account's own, with its langs, labels and alt texts as a post's.
// It reports false for a reply to another account's
// post or to a comment, which createRecord records as a comment reply.
func (b *bskySim) selfReply(uri, cid string, a bskyAccount, text string, shas []string, opts map[string]any, alts []string, root, parent string) bool {
	if _, ok := b.n.OwnPost(parent, a.did); !ok {
		return false
	}
	b.n.PublishReply(uri, a.did, text, shas, parent)
	if len(opts) > 0 || len(alts) > 0 {
		b.n.UpdateRecord(uri, func(r *Record) { r.Options, r.AltTexts = opts, alts })
	}
	p := parent
	if p == root {
		p = ""
	}
	b.n.AddAccountComment(Comment{ID: uri, CID: cid, PostID: root, ParentID: p, Author: a.handle, AuthorID: a.did, Text: text}, shas)
	return true
}
