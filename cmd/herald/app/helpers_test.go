package app_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
)

func newRecorder() *httptest.ResponseRecorder { return httptest.NewRecorder() }

func mustRequest(method, path string) *http.Request { return httptest.NewRequest(method, path, nil) }

func discardLog() *slog.Logger { return slog.New(slog.DiscardHandler) }
