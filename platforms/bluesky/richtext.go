package bluesky

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/heraldhq/herald/platforms"
)

// Bluesky does not link anything a post's text does not mark up with a facet: a byte range of the
// UTF-8 text plus a feature (link, mention or tag). These patterns follow the detection of the
// official client (@atproto/api RichText.detectFacets), simplified: links need an http(s) scheme
// (platforms.LinkSpans, the link finder link cards use too).
var (
	mentionPattern = regexp.MustCompile(`(?:^|[\s(])(@([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.)+[a-zA-Z]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)`)
	digitsOnly     = regexp.MustCompile(`^[0-9]+$`)
)

// maxTagLength is the longest hashtag (in characters, without '#') Bluesky links.
const maxTagLength = 64

// facetSpan is a detected span of the text.
type facetSpan struct {
	start, end int // byte offsets in the UTF-8 text
	kind       string
	value      string // URI, handle (without '@') or tag (without '#')
}

// detectFacets finds links, mentions and hashtags with their UTF-8 byte ranges.
func detectFacets(text string) []facetSpan {
	var spans []facetSpan
	// Each kind needs a character most texts lack; a text without it skips that pattern.
	for _, l := range platforms.LinkSpans(text) {
		spans = append(spans, facetSpan{start: l[0], end: l[1], kind: "link", value: text[l[0]:l[1]]})
	}
	if strings.Contains(text, "@") {
		for _, m := range mentionPattern.FindAllStringSubmatchIndex(text, -1) {
			s, e := m[2], m[3]
			if e < len(text) {
				if r, _ := utf8.DecodeRuneInString(text[e:]); isHandleChar(r) {
					continue // part of something longer (an email address, a path)
				}
			}
			spans = append(spans, facetSpan{start: s, end: e, kind: "mention", value: strings.ToLower(text[s+1 : e])})
		}
	}
	if strings.ContainsAny(text, "#＃") {
		for _, m := range tagSpans(text) {
			s, e := m[0], m[1]
			tag := strings.TrimRight(text[s:e], ".,;:!?'\")]}")
			_, size := utf8.DecodeRuneInString(tag)
			value := tag[size:]
			if value == "" || digitsOnly.MatchString(value) || utf8.RuneCountInString(value) > maxTagLength {
				continue
			}
			spans = append(spans, facetSpan{start: s, end: s + len(tag), kind: "tag", value: value})
		}
	}
	return dropOverlaps(spans)
}

// tagSpans finds the spans the pattern `(?:^|\s)([#＃][^\s#＃]+)` would capture, without a
// regular expression (a text is read once, on every post): a '#' or '＃' at the start or after
// ASCII white space, then at least one character that is none of those.
func tagSpans(text string) [][2]int {
	var spans [][2]int
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		if !isTagMark(r) || (i > 0 && !isASCIISpace(text[i-1])) {
			i += size
			continue
		}
		end := i + size
		for end < len(text) {
			r, n := utf8.DecodeRuneInString(text[end:])
			if isTagMark(r) || (r < utf8.RuneSelf && isASCIISpace(byte(r))) {
				break
			}
			end += n
		}
		if end > i+size {
			spans = append(spans, [2]int{i, end})
		}
		i = end
	}
	return spans
}

func isTagMark(r rune) bool { return r == '#' || r == '＃' }

// isASCIISpace is regexp's \s: tab, newline, form feed, carriage return and space.
func isASCIISpace(b byte) bool {
	return b == '\t' || b == '\n' || b == '\f' || b == '\r' || b == ' '
}

func isHandleChar(r rune) bool {
	return r == '-' || r == '@' || r == '/' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
}

// dropOverlaps keeps the earliest of overlapping spans (a hashtag inside a URL is not a tag).
func dropOverlaps(spans []facetSpan) []facetSpan {
	out := spans[:0]
	for _, s := range spans {
		keep := true
		for _, o := range out {
			if s.start < o.end && o.start < s.end {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, s)
		}
	}
	return out
}
