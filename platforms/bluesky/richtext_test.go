package bluesky

import (
	"math/rand/v2"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// tagReference is the pattern tagSpans replaces.
var tagReference = regexp.MustCompile(`(?:^|\s)([#＃][^\s#＃]+)`)

func referenceTagSpans(text string) [][2]int {
	var spans [][2]int
	for _, m := range tagReference.FindAllStringSubmatchIndex(text, -1) {
		spans = append(spans, [2]int{m[2], m[3]})
	}
	return spans
}

// tagSpans finds exactly the spans of the regular expression it replaces.
func TestTagSpansMatchThePattern(t *testing.T) {
	t.Parallel()
	cases := []string{
		"", "#", "##", "#a", "a#b", "#a#b", "#a #b", " #a", "\t#a\n#b\r#c\f#d", "\v#a",
		"＃日本語 #two", "#＃a", "x ＃", "# a", "#a, #b. (#c)", "launch day #launch!", "\xff#a \xff",
		"#\xff", "a  #b  ", "#1234 #12a", "mail me@x.com #tag",
	}
	alphabet := []string{"#", "＃", " ", "\t", "\n", "a", "1", ".", "é", "日", "\xff", "@", "\v"}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		var b []byte
		for n := rng.IntN(12); n > 0; n-- {
			b = append(b, alphabet[rng.IntN(len(alphabet))]...)
		}
		cases = append(cases, string(b))
	}
	for _, text := range cases {
		require.Equal(t, referenceTagSpans(text), tagSpans(text), "%q", text)
	}
}

func BenchmarkDetectFacets(b *testing.B) {
	text := "Bench post 1234: our autumn collection is out today, with free shipping on every order this week. #launch"
	for b.Loop() {
		detectFacets(text)
	}
}
