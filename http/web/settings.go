package web

import "github.com/labstack/echo/v5"

// settings is GET /settings: the user's name, time zone and password. The time zone select
// lists the browser's IANA zones (Intl.supportedValuesOf), the current one first.
func (p *pages) settings(c *echo.Context) error {
	v := p.newView(c, "Settings", "settings", nil)
	return p.render(c, 200, "settings", v)
}
