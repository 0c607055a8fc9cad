package linkedin

import (
	"bytes"
	"context"
	"io"

	"github.com/heraldhq/herald/platforms"
)

// article is the content of a post without media that shares its link's page as an article:
// content.article with the link as source, the page's title (the link itself when the page has
// none: LinkedIn requires one) and description, and its image uploaded through the Images API as
// the thumbnail when it is a JPEG, PNG or GIF (the types LinkedIn takes). nil when there is no
// link, options.link_card is false, or the page cannot be read (unreachable, refused as a private
// address, too slow): the post is then its text alone, never a failure. Only LinkedIn's own
// refusal of the thumbnail's upload is an error, as for any media.
func (a *Adapter) article(ctx context.Context, c platforms.Credentials, p platforms.Post) (map[string]any, error) {
	link := platforms.CardLink(p.Options, p.Text)
	if link == "" || a.cards == nil {
		return nil, nil
	}
	card, err := a.cards.ReadCard(ctx, link)
	if err != nil {
		return nil, nil
	}
	title := card.Title
	if title == "" {
		title = link
	}
	article := map[string]any{"source": link, "title": title}
	if card.Description != "" {
		article["description"] = card.Description
	}
	if img := card.Image; img != nil {
		switch img.ContentType {
		case "image/jpeg", "image/png", "image/gif":
			data := img.Data
			urn, err := a.uploadImage(ctx, c, platforms.Media{ContentType: img.ContentType, Size: int64(len(data)), Filename: "thumbnail",
				Open: func(context.Context) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }})
			if err != nil {
				return nil, err
			}
			article["thumbnail"] = urn
		}
	}
	return map[string]any{"article": article}, nil
}
