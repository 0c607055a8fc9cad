package live

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/http/apierr"
)

// Ranges are the accepted values of the range parameter.
var Ranges = []string{"7d", "14d", "28d", "90d", "365d", "custom"}

var rangeDays = map[string]int{"7d": 7, "14d": 14, "28d": 28, "90d": 90, "365d": 365}

// Window is the time window of a request: publications published in [Since, Until] are read.
type Window struct {
	Range string
	Since time.Time
	Until time.Time
}

// ParseWindow validates the range, since and until parameters ("" when absent) at now. A named
// range ends now; custom takes since (required) and until (default now), at most 365 days apart.
func ParseWindow(rng, since, until string, now time.Time) (Window, error) {
	now = now.UTC()
	if rng == "" {
		rng = "7d"
	}
	if !slices.Contains(Ranges, rng) {
		return Window{}, apierr.Validation("range: must be one of %s", strings.Join(Ranges, ", "))
	}
	if rng != "custom" {
		if since != "" {
			return Window{}, apierr.Validation("since: only allowed with range=custom")
		}
		if until != "" {
			return Window{}, apierr.Validation("until: only allowed with range=custom")
		}
		return Window{Range: rng, Since: now.AddDate(0, 0, -rangeDays[rng]), Until: now}, nil
	}
	if since == "" {
		return Window{}, apierr.Validation("since: Required with range=custom")
	}
	w := Window{Range: rng, Until: now}
	var err error
	if w.Since, err = parseTime("since", since); err != nil {
		return Window{}, err
	}
	if until != "" {
		if w.Until, err = parseTime("until", until); err != nil {
			return Window{}, err
		}
	}
	if !w.Until.After(w.Since) {
		return Window{}, apierr.Validation("until: must be after since")
	}
	if w.Until.Sub(w.Since) > MaxWindow {
		return Window{}, apierr.Validation("since: the window from since to until is at most 365 days")
	}
	return w, nil
}

func parseTime(name, v string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, apierr.Validation("%s: Invalid datetime (ISO 8601 with a time zone, for example 2026-05-01T00:00:00Z)", name)
	}
	return t.UTC(), nil
}

// key is the window's part of a cache key: a named range by its name (it moves with the
// clock), a custom one by its instants.
func (w Window) key() string {
	if w.Range != "custom" {
		return "r=" + w.Range
	}
	return fmt.Sprintf("r=custom;s=%s;u=%s", strconv.FormatInt(w.Since.UnixNano(), 36), strconv.FormatInt(w.Until.UnixNano(), 36))
}

// ParseBool reads a boolean query parameter ("" is def).
func ParseBool(name, v string, def bool) (bool, error) {
	switch v {
	case "":
		return def, nil
	case "true", "1":
		return true, nil
	case "false", "0":
		return false, nil
	}
	return false, apierr.Validation("%s: Expected boolean, received %q", name, truncate(v, 32))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
