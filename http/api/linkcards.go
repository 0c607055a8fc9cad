package api

import (
	"context"
	"sync"

	"github.com/heraldhq/herald/platforms"
)

// PreviewCard is the link card a target would carry, as Herald read its page: what Bluesky and
// LinkedIn show (they show only what they are sent); Threads and Facebook read the page
// themselves and take only its URL.
type PreviewCard struct {
	URL         string `json:"url"`
	Title       string `json:"title"`
	Description string `json:"description"`
	// ImageURL is the card's image as read (absent: none, or it could not be read).
	ImageURL string `json:"image_url,omitempty"`
}

// cardTarget is a target of POST /v1/posts/validate whose link card is read: out[i] in
// checkTargets, its link, and the field the link came from (options.link, else content).
type cardTarget struct {
	i        int
	link     string
	field    string
	platform platforms.Platform
}

// cardFor is the card a target would carry: its link and the field it came from; ok is false
// when it carries none (a network without cards, media, no link, options.link_card false).
func cardFor(opts platforms.Options, text string, media []platforms.Media) (link, field string, ok bool) {
	co, isCard := opts.(platforms.CardOptions)
	if !isCard || len(media) > 0 {
		return "", "", false
	}
	if link = platforms.CardLink(opts, text); link == "" {
		return "", "", false
	}
	field = "content"
	if given, _ := co.CardSettings(); given != "" {
		field = "options.link"
	}
	return link, field, true
}

// maxCardReads bounds the pages one validation reads at once.
const maxCardReads = 4

// readCards reads the targets' cards, each distinct link once and several at once (each read is
// bounded by the reader's own time limit), and lays each card on its target's preview, or a
// warning naming the target's field on the target when its page cannot be read (a host that is,
// or resolves to, a private address is refused before anything is fetched). Only validation
// reads pages: create and publish never wait on one.
func (h *handlers) readCards(ctx context.Context, out []TargetCheck, want []cardTarget) {
	if h.Cards == nil || len(want) == 0 {
		return
	}
	type result struct {
		card platforms.LinkCard
		err  error
	}
	// Each distinct link once, its result in its own slot.
	index := map[string]int{}
	var links []string
	for _, w := range want {
		if _, ok := index[w.link]; !ok {
			index[w.link] = len(links)
			links = append(links, w.link)
		}
	}
	results := make([]result, len(links))
	var wg sync.WaitGroup
	slots := make(chan struct{}, maxCardReads)
	for i, link := range links {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			results[i].card, results[i].err = h.Cards.ReadCard(ctx, link)
		}()
	}
	wg.Wait()
	for _, w := range want {
		r, tc := results[index[w.link]], &out[w.i]
		if r.err != nil {
			msg := "no link card: " + r.err.Error()
			switch w.platform {
			case platforms.Threads, platforms.Facebook:
				msg += "; " + w.platform.Name() + " reads the page itself and may show no card"
			default:
				msg += "; the post goes out without a card"
			}
			tc.Warnings = append(tc.Warnings, platforms.FieldError{Field: w.field, Message: msg})
			continue
		}
		if tc.Preview != nil {
			pc := &PreviewCard{URL: r.card.URL, Title: r.card.Title, Description: r.card.Description}
			if r.card.Image != nil {
				pc.ImageURL = r.card.Image.URL
			}
			tc.Preview.LinkCard = pc
		}
	}
}
