package bluesky

import (
	"context"
	"net/http"

	"github.com/heraldhq/herald/platforms"
)

// linkCard is the external embed (app.bsky.embed.external) of a post without media: the card of
// its link (options.link, else the text's first link; none with options.link_card false), with
// the page's title, description and image, the image uploaded as a blob (a thumb is at most
// 1,000,000 bytes, as an image). Bluesky shows no card it is not sent, and reads no page itself.
// A page that cannot be read (unreachable, refused as a private address, too slow) leaves the
// post without a card: nil, never an error. Only Bluesky's own refusal of the upload is an error,
// as for any media.
func (a *Adapter) linkCard(ctx context.Context, c platforms.Credentials, text string, o *platforms.BlueskyOptions) (map[string]any, error) {
	link := platforms.CardLink(o, text)
	if link == "" || a.cards == nil {
		return nil, nil
	}
	card, err := a.cards.ReadCard(ctx, link)
	if err != nil {
		return nil, nil
	}
	external := map[string]any{"uri": link, "title": card.Title, "description": card.Description}
	if img := card.Image; img != nil && len(img.Data) <= maxImageBytes {
		var out struct {
			Blob *blobRef `json:"blob"`
		}
		if err := a.call(ctx, platforms.Call{Method: http.MethodPost, URL: a.xrpc(c, "com.atproto.repo.uploadBlob"), Body: img.Data, ContentType: img.ContentType, Bearer: c.AccessToken}, &out); err != nil {
			return nil, err
		}
		if out.Blob != nil && out.Blob.Ref.Link != "" {
			external["thumb"] = out.Blob
		}
	}
	return map[string]any{"$type": "app.bsky.embed.external", "external": external}, nil
}
