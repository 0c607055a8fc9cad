package platforms_test

import (
	"testing"

	"github.com/rivo/uniseg"

	"github.com/heraldhq/herald/platforms"
)

func FuzzGraphemeCount(f *testing.F) {
	for _, s := range []string{"", "plain text", "a\r\nb\n\rc\r\r\n", "\x00\x7f", "émoji 👩‍👩‍👧 🇫🇷", "\r\n\r\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := platforms.GraphemeCount(s), uniseg.GraphemeClusterCount(s); got != want {
			t.Fatalf("%q: %d graphemes, want %d", s, got, want)
		}
	})
}
