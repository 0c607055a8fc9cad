package linkcard_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/heraldhq/herald/platforms/linkcard"
)

// BenchmarkReadCard reads a card from a loopback page with a 100 KiB head (cache off: each read
// fetches and parses), and from the cache.
func BenchmarkReadCard(b *testing.B) {
	page := `<html><head><meta property="og:title" content="T"><meta property="og:description" content="D">` +
		strings.Repeat(`<meta name="x" content="padding padding padding">`, 2048) + `</head><body></body></html>`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(page))
	}))
	b.Cleanup(srv.Close)
	b.Run("fetch", func(b *testing.B) {
		r := linkcard.New(linkcard.Options{Egress: loopback(), CacheEntries: 1})
		for i := 0; b.Loop(); i++ {
			if _, err := r.ReadCard(context.Background(), fmt.Sprintf("%s/p%d", srv.URL, i)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		r := linkcard.New(linkcard.Options{Egress: loopback()})
		for b.Loop() {
			if _, err := r.ReadCard(context.Background(), srv.URL+"/p"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
