package sim

// Threads and first comments in the record: a reply of an account to its own post (a thread's next
// part, a first comment on X, Bluesky and Threads) is a post of the account with ReplyTo; a comment
// of an account on its post (LinkedIn, Instagram, Facebook, YouTube) is recorded with CommentOn.

// PublishReply records a reply of account to its post replyTo as a post of the account.
func (n *Network) PublishReply(id, account, text string, mediaSHA []string, replyTo string) Record {
	if mediaSHA == nil {
		mediaSHA = []string{}
	}
	return n.record(Record{ID: id, Platform: string(n.Platform), Account: account, Text: text, MediaSHA256: mediaSHA,
		ReplyTo: replyTo, CreatedAt: n.Sim.opts.Now().UTC()})
}

// PublishComment records a comment of account on the post on. It is not a post of the account:
// it does not count as its newest publication, and the networks' post listings leave it out.
func (n *Network) PublishComment(id, account, text, on string) Record {
	return n.record(Record{ID: id, Platform: string(n.Platform), Account: account, Text: text, MediaSHA256: []string{},
		CommentOn: on, CreatedAt: n.Sim.opts.Now().UTC()})
}

// OwnPost returns the post of account with this id (a post or one of its replies, never a
// comment): what a reply of the account to its own post answers.
func (n *Network) OwnPost(id, account string) (Record, bool) {
	rec, ok := n.Post(id)
	if !ok || rec.Account != account || rec.CommentOn != "" {
		return Record{}, false
	}
	return rec, true
}

// ThreadRoot is the post a reply's chain of ReplyTo begins with (id itself for a post).
func (n *Network) ThreadRoot(id string) string {
	for range 1000 {
		rec, ok := n.Post(id)
		if !ok || rec.ReplyTo == "" {
			return id
		}
		id = rec.ReplyTo
	}
	return id
}

// CommentsOn lists the comments recorded on a post, oldest first.
func (n *Network) CommentsOn(postID string) []Record {
	var out []Record
	for _, rec := range n.Sim.Publications(n.Platform) {
		if rec.CommentOn == postID {
			out = append(out, rec)
		}
	}
	return out
}

// AddAccountComment lists a reply or comment an account made through the network's API that
// answers no comment (a thread's next part, a first comment) with the post's comments, as the
// networks that list them show it (X's conversation search, Bluesky's getPostThread, YouTube's
// comment threads): c has ID, PostID (the thread's root), ParentID (empty when it answers the
// root), Author, AuthorID and Text set. Unlike RecordReply it is not a comment reply Herald sent.
func (n *Network) AddAccountComment(c Comment, mediaSHA []string) Comment {
	c.Platform = string(n.Platform)
	c.MediaSHA256 = mediaSHA
	if c.CreatedAt.IsZero() {
		c.CreatedAt = n.Sim.Now().UTC()
	}
	if post, ok := n.Post(c.PostID); ok {
		c.ByAccount = post.Account == c.AuthorID
	}
	return n.Sim.live.addComment(n.Platform, c)
}
