package sim

import (
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"github.com/heraldhq/herald/platforms"
)

// The simulator's page of one publication, for a person: sandbox mode links a published post's
// "View on …" to it instead of to the real network, where the simulator's ids mean nothing.
//
//	GET /_sim/publication?platform=P&id=ID   HTML (JSON with Accept: application/json): the record
//
// It only reads. Everything in a record came from a client (text, alt texts, options), so the page
// is printed through html/template's escaping and answers with a CSP that allows no script.

// Publication returns the record of the publication id on platform p: the newest one when a
// network reused an id (it does not), and false when there is none.
func (s *Sim) Publication(p platforms.Platform, id string) (Record, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.records) - 1; i >= 0; i-- {
		if r := s.records[i]; r.ID == id && r.Platform == string(p) {
			return r, true
		}
	}
	return Record{}, false
}

// PublicationPath is the path of the page of one publication, relative to the simulator's base URL.
func PublicationPath(p platforms.Platform, id string) string {
	return "/_sim/publication?" + url.Values{"platform": {string(p)}, "id": {id}}.Encode()
}

var publicationPage = template.Must(template.New("publication").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} · Herald network simulator</title>
</head>
<body>
<main>
<p>Herald's network simulator: this is its record of a publication, not the real network.</p>
<h1>{{.Title}}</h1>
{{with .Record}}<dl>
<dt>Network</dt><dd>{{.Platform}}</dd>
<dt>Id</dt><dd><code>{{.ID}}</code></dd>
<dt>Account</dt><dd><code>{{.Account}}</code></dd>
<dt>Created</dt><dd><time datetime="{{.CreatedAt.Format "2006-01-02T15:04:05Z07:00"}}">{{.CreatedAt.Format "2006-01-02 15:04:05 MST"}}</time></dd>
{{if .ReplyTo}}<dt>Reply to</dt><dd><code>{{.ReplyTo}}</code></dd>{{end}}
{{if .CommentOn}}<dt>Comment on</dt><dd><code>{{.CommentOn}}</code></dd>{{end}}
<dt>Text</dt><dd><pre>{{.Text}}</pre></dd>
<dt>Media</dt><dd>{{if .MediaSHA256}}<ol>{{range $i, $m := .MediaSHA256}}<li><code>sha256 {{$m}}</code>{{if lt $i (len $.Types)}} {{index $.Types $i}}{{end}}{{if lt $i (len $.Alts)}}{{with index $.Alts $i}}, alt text: {{.}}{{end}}{{end}}</li>{{end}}</ol>{{else}}none{{end}}</dd>
{{if .Options}}<dt>Options</dt><dd><dl>{{range $k, $v := .Options}}<dt>{{$k}}</dt><dd>{{printf "%v" $v}}</dd>{{end}}</dl></dd>{{end}}
</dl>{{else}}<p>The simulator has no record of this publication: it was published to another simulator, or before this one started (the simulator keeps its records in memory).</p>{{end}}
</main>
</body>
</html>
`))

func (s *Sim) viewRoutes() {
	s.mux.HandleFunc("GET /_sim/publication", func(w http.ResponseWriter, r *http.Request) {
		p := platforms.Platform(r.URL.Query().Get("platform"))
		id := r.URL.Query().Get("id")
		if !p.Valid() || id == "" {
			WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "want ?platform=<network id>&id=<publication id>"})
			return
		}
		rec, ok := s.Publication(p, id)
		status := http.StatusOK
		if !ok {
			status = http.StatusNotFound
		}
		if strings.Contains(r.Header.Get("Accept"), "application/json") {
			if !ok {
				WriteJSON(w, status, map[string]string{"error": "no such publication"})
				return
			}
			WriteJSON(w, status, rec)
			return
		}
		data := struct {
			Title  string
			Record *Record
			Types  []string
			Alts   []string
		}{Title: "No such publication"}
		if ok {
			data.Title, data.Record, data.Types, data.Alts = "A publication on "+string(p), &rec, rec.MediaTypes, rec.AltTexts
		}
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Content-Security-Policy", "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		w.WriteHeader(status)
		_ = publicationPage.Execute(w, data)
	})
}
