package app_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
)

func newRecorder() *httptest.ResponseRecorder { return httptest.NewRecorder() }

func mustRequest(method, path string) *http.Request { return httptest.NewRequest(method, path, nil) }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func discardLog() *slog.Logger { return slog.New(slog.DiscardHandler) }
