package x

// Threads and first comments (networks.md §1.2): a thread's next part, and a first comment, are
// the account's own replies, created with POST /2/tweets and reply.in_reply_to_tweet_id; they are
// found again on the account's timeline (GET /2/users/{id}/tweets), whose posts say what they
// answer in referenced_tweets.

import (
	"context"
	"html"
	"net/url"
	"strings"
	"time"

	"github.com/heraldhq/herald/platforms"
)

var (
	_ platforms.Threader       = (*Adapter)(nil)
	_ platforms.FirstCommenter = (*Adapter)(nil)
)

// PublishReply publishes p (text and up to 4 images, or one GIF or video, with their alt texts) as
// the account's reply to parent. The post's options (reply settings, poll) belong to the thread's
// first post and are not sent again. A parent X no longer shows is Permanent and wraps
// platforms.ErrNotFound; a 5xx or a lost answer is Unknown (LookupReply resolves it).
func (a *Adapter) PublishReply(ctx context.Context, c platforms.Credentials, root, parent platforms.Publication, p platforms.Post) (platforms.Result, error) {
	if err := a.Validate(p); err != nil {
		return platforms.Result{}, err
	}
	if !isID(parent.ID) {
		return platforms.Result{}, notFound(0, "%q is not an X post id", parent.ID)
	}
	id, r, err := a.createTweetWith(ctx, c, p.Text, p.Media, parent.ID, nil)
	if err != nil {
		return platforms.Result{}, err
	}
	return platforms.Result{Publication: publication(c, id), Rate: rateInfo(r.Header)}, nil
}

// LookupReply reads the account's timeline since then (replies included) for its reply to parent
// with p's text: a post whose referenced_tweets has replied_to parent. Texts are compared as
// Lookup compares them, after the @mentions X may put before a reply's text.
func (a *Adapter) LookupReply(ctx context.Context, c platforms.Credentials, root, parent platforms.Publication, p platforms.Post, since time.Time) (platforms.Publication, bool, error) {
	want := maskURLs(p.Text)
	return a.findTweet(ctx, c, since, url.Values{"tweet.fields": {"created_at,conversation_id,referenced_tweets"}, "exclude": {"retweets"}}, func(t timelineTweet) bool {
		answers := false
		for _, ref := range t.ReferencedTweets {
			answers = answers || (ref.Type == "replied_to" && ref.ID == parent.ID)
		}
		if !answers {
			return false
		}
		got := maskURLs(html.UnescapeString(t.Text))
		for _, g := range []string{got, withoutMentions(got)} {
			if g == want || (len(p.Media) > 0 && strings.TrimSpace(strings.TrimSuffix(g, urlMask)) == want) {
				return true
			}
		}
		return false
	})
}

// withoutMentions drops the @mentions that begin a reply's text.
func withoutMentions(s string) string {
	for strings.HasPrefix(s, "@") {
		i := strings.IndexAny(s, " \n")
		if i < 0 {
			return ""
		}
		s = strings.TrimLeft(s[i:], " \n")
	}
	return s
}

// PublishComment comments on the account's post: its reply to it (PublishReply).
func (a *Adapter) PublishComment(ctx context.Context, c platforms.Credentials, on platforms.Publication, text string) (platforms.Result, error) {
	return a.PublishReply(ctx, c, on, on, platforms.Post{Text: text})
}

// LookupComment finds the account's reply to its post with this text (LookupReply).
func (a *Adapter) LookupComment(ctx context.Context, c platforms.Credentials, on platforms.Publication, text string, since time.Time) (platforms.Publication, bool, error) {
	return a.LookupReply(ctx, c, on, on, platforms.Post{Text: text}, since)
}
