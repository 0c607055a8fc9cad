package linkedin

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/pdf/pdftest"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/platformstest"
	"github.com/heraldhq/herald/platforms/sim"
)

func TestPublishDocument(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	data := pdftest.Build(12, true)
	doc := platformstest.Media("d", platforms.PDF, "Q3 results.pdf", data, true)

	res, err := b.a.Publish(ctx, b.creds, platforms.Post{Text: "Our quarter in twelve slides", Media: []platforms.Media{doc},
		Options: &platforms.LinkedInOptions{DocumentTitle: "Q3 in twelve slides"}})
	require.NoError(t, err)
	_, err = b.a.Publish(ctx, b.creds, platforms.Post{Text: "The same deck, untitled", Media: []platforms.Media{doc}})
	require.NoError(t, err)

	pubs := b.sim.Publications(platforms.LinkedIn)
	require.Len(t, pubs, 2)
	require.Equal(t, res.Publication.ID, pubs[0].ID)
	require.Equal(t, []string{sha(data)}, pubs[0].MediaSHA256)
	require.Equal(t, "Q3 in twelve slides", pubs[0].Options["document_title"])
	require.Equal(t, "Q3 results", pubs[1].Options["document_title"], "the file's name without its extension")

	var docCalls int
	for _, l := range platformstest.Requests(t, b.sim, platforms.LinkedIn) {
		if l.Path == "/rest/documents" {
			docCalls++
		}
	}
	require.Equal(t, 2, docCalls, "one initializeUpload per document post")
}

func TestPublishDocumentRefusedByLinkedIn(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	// A file that claims PDF and is not one, or one of 301 pages, is refused by LinkedIn's
	// upload; nothing is posted.
	for _, data := range [][]byte{[]byte("GIF89a not a pdf"), pdftest.Build(301, false)} {
		doc := platformstest.Media("d", platforms.PDF, "deck.pdf", data, true)
		_, err := b.a.Publish(ctx, b.creds, platforms.Post{Text: "deck", Media: []platforms.Media{doc}})
		require.Error(t, err)
		require.Equal(t, platforms.Permanent, kindOf(t, err))
	}
	require.Empty(t, b.sim.Publications(platforms.LinkedIn))
}
