package bench

import (
	"os"
	"testing"
)

func TestDuplicatesCountsRepeatsPerAccountAndText(t *testing.T) {
	pubs := []simPublication{
		{Platform: "linkedin", Account: "a", Text: "one"},
		{Platform: "linkedin", Account: "a", Text: "one"}, // a duplicate
		{Platform: "linkedin", Account: "b", Text: "one"}, // another account
		{Platform: "pinterest", Account: "a", Text: "one"},
		{Platform: "linkedin", Account: "a", Text: "two"},
		{Platform: "linkedin", Account: "a", Text: "one"}, // a second duplicate
	}
	if got := duplicates(pubs); got != 2 {
		t.Fatalf("duplicates = %d, want 2", got)
	}
	if got := duplicates(nil); got != 0 {
		t.Fatalf("duplicates(nil) = %d, want 0", got)
	}
}

func TestCountListIsOrdered(t *testing.T) {
	if got := countList(map[string]int{"published": 3, "failed": 1, "partial": 2}); got != "failed 1, partial 2, published 3" {
		t.Fatalf("countList = %q", got)
	}
}

func TestReadMemKBOfThisProcess(t *testing.T) {
	m := readMemKB(os.Getpid())
	if m.rss <= 0 || m.anon <= 0 || m.rss < m.anon {
		t.Fatalf("implausible memory of this process: %+v", m)
	}
}
