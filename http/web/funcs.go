package web

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"html/template"
	"io/fs"
	"net/url"
	"strconv"
	"strings"

	"github.com/heraldhq/herald/http/api"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// deliveryAnswer is a delivery's last answer body as the log shows it: Text when IsText, else
// only its size; Cut when only its first 4 KiB were kept.
type deliveryAnswer struct {
	Text   string
	IsText bool
	Bytes  int64
	Cut    bool
}

// assetTags are the ETags of the embedded assets (a hash of their bytes), so that a browser
// revalidates them cheaply and never keeps an old script after an upgrade.
var assetTags = func() map[string]string {
	out := map[string]string{}
	_ = fs.WalkDir(staticFS, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(staticFS, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		out[strings.TrimPrefix(p, "static/")] = `"` + hex.EncodeToString(sum[:8]) + `"`
		return nil
	})
	return out
}()

// networkNames are the networks' names as people write them.
var networkNames = map[string]string{
	"linkedin": "LinkedIn", "instagram": "Instagram", "youtube": "YouTube", "pinterest": "Pinterest",
	"tiktok": "TikTok", "threads": "Threads", "facebook": "Facebook", "twitter_x": "X", "bluesky": "Bluesky",
}

func networkName(p string) string {
	if n, ok := networkNames[p]; ok {
		return n
	}
	return p
}

// excerpt shortens a text to n characters for lists (escaped by the template, like all text).
func excerpt(s string, n int) string { return platforms.Excerpt(s, n) }

// allNetworks is every network in the API's order.
func allNetworks() []string {
	out := make([]string, 0, len(platforms.All))
	for _, p := range platforms.All {
		out = append(out, string(p))
	}
	return out
}

// navItem is one entry of the layout's navigation.
type navItem struct{ Key, Path, Label string }

var nav = []navItem{
	{"overview", "/", "Overview"}, {"compose", "/compose", "Compose"}, {"posts", "/posts", "Posts"},
	{"campaigns", "/campaigns", "Campaigns"},
	{"calendar", "/calendar", "Calendar"}, {"approvals", "/approvals", "Approvals"}, {"analytics", "/analytics", "Analytics"}, {"inbox", "/inbox", "Inbox"},
	{"accounts", "/accounts", "Accounts"},
	{"developer", "/developer", "Developer"}, {"settings", "/settings", "Settings"}, {"members", "/members", "Members"},
}

var funcs = template.FuncMap{
	"navItems": func() []navItem { return nav },
	"network":  networkName,
	"excerpt":  excerpt,
	"deref": func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	},
	"derefInt": func(n *int) int {
		if n == nil {
			return 0
		}
		return *n
	},
	"join": strings.Join,
	// kindLabel names an account's kind (persistence.AccountKinds) as the accounts list shows it.
	"kindLabel": func(kind string) string {
		switch kind {
		case "organization":
			return "Organisation"
		case "page":
			return "Page"
		case "channel":
			return "Channel"
		}
		return "Profile"
	},
	"add": func(a, b int) int { return a + b },
	"asset": func(name string) string {
		return "/static/" + name + "?v=" + strings.Trim(assetTags[name], `"`)
	},
	"statusLabel": func(s string) string { return strings.ReplaceAll(s, "_", " ") },
	// pathEscape makes a network's id (a Bluesky at:// URI, for one) one segment of a path.
	"pathEscape": url.PathEscape,
	// count is a counter the network may not report: "–" when it does not.
	"count": func(n *int64) string {
		if n == nil {
			return "–"
		}
		return strconv.FormatInt(*n, 10)
	},
	// prettyJSON indents a JSON body for reading (a webhook delivery's payload); a body that is
	// not JSON is shown as it is.
	"prettyJSON": func(b []byte) string {
		var out bytes.Buffer
		if err := json.Indent(&out, b, "", "  "); err != nil {
			return string(b)
		}
		return out.String()
	},
	// answer is what a webhook delivery's log shows of the receiver's last answer: its body as
	// text (the API's rule, api.AnswerText: escaped by the template), else how many bytes it had.
	"answer": func(d *persistence.Delivery) deliveryAnswer {
		a := deliveryAnswer{Bytes: d.LastResponseSize, Cut: d.LastResponseSize > int64(len(d.LastResponseBody))}
		a.Text, a.IsText = api.AnswerText(d)
		return a
	},
	// initial is the first letter of a name, upper-cased: an account's avatar. Herald draws it
	// rather than loading the network's picture, which the dashboard's policy (img-src 'self')
	// refuses and which would tell the network who looks at the page.
	"initial": func(name string) string {
		name = strings.TrimLeft(name, "@ ")
		for _, r := range name {
			return strings.ToUpper(string(r))
		}
		return "?"
	},
}
