package platforms

import "context"

// A link card is the preview of a linked page that a post shows under its text: the page's title,
// description and image. Four networks take one. Bluesky (an app.bsky.embed.external) and
// LinkedIn (an article share) show only what the poster sends, so Herald reads the page itself
// (CardReader, through the same SSRF-safe egress as webhooks); Threads (link_attachment) and
// Facebook (a feed post's link) read the page themselves and take only its URL.
//
// The link is the target's options.link when given, else the first http(s) link of its text
// (FirstLink); options.link_card false attaches none. A post carries one attachment: a post with
// media carries no card. A page that cannot be read never fails a post: it goes out without a
// card.

// LinkCard is what a page says of itself, as a card shows it.
type LinkCard struct {
	// URL is the link the card is for, as the post gives it.
	URL string `json:"url"`
	// Title and Description are the page's og:title and og:description (else its <title> and
	// meta description), white space collapsed.
	Title       string `json:"title"`
	Description string `json:"description"`
	// Image is the page's og:image, read; nil when the page names none or it could not be read.
	Image *CardImage `json:"image,omitempty"`
}

// CardImage is a card's image, read.
type CardImage struct {
	// URL is where it was read (the og:image resolved against the page).
	URL string `json:"url"`
	// ContentType is its type as sniffed from its bytes: image/jpeg, image/png, image/gif or
	// image/webp.
	ContentType string `json:"content_type"`
	Data        []byte `json:"-"`
}

// CardReader reads a page's card. Errors say, safe to show, why the page could not be read (a
// host that is or resolves to a private address is refused before anything is fetched).
type CardReader interface {
	ReadCard(ctx context.Context, link string) (LinkCard, error)
}

// CardOptions are the options of the networks that take a link card (Bluesky, Threads, LinkedIn,
// Facebook).
type CardOptions interface {
	Options
	// CardSettings are the options' link and link_card (nil: not given).
	CardSettings() (link string, on *bool)
}

// CardSettings of nil options are none given.
func (o *BlueskyOptions) CardSettings() (string, *bool) {
	if o == nil {
		return "", nil
	}
	return o.Link, o.LinkCard
}

func (o *ThreadsOptions) CardSettings() (string, *bool) {
	if o == nil {
		return "", nil
	}
	return o.Link, o.LinkCard
}

func (o *LinkedInOptions) CardSettings() (string, *bool) {
	if o == nil {
		return "", nil
	}
	return o.Link, o.LinkCard
}

func (o *FacebookOptions) CardSettings() (string, *bool) {
	if o == nil {
		return "", nil
	}
	return o.Link, o.LinkCard
}

// CardLink is the link a post's card is for: options.link when given, else the first http(s)
// link of the text; "" when there is none, when options.link_card is false, or when the network
// takes no card (o is not CardOptions; nil options are none given). The caller leaves the card
// out of a post with media.
func CardLink(o Options, text string) string {
	switch co := o.(type) {
	case nil:
	case CardOptions:
		link, on := co.CardSettings()
		if on != nil && !*on {
			return ""
		}
		if link != "" {
			return link
		}
	default:
		return ""
	}
	return FirstLink(text)
}
