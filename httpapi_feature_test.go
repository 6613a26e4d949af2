package buzz_test

import (
	"github.com/buzzrelay/buzz"
	"github.com/buzzrelay/buzz/httpapi"
)

// The HTTP API for the tests of package buzz (see NewHTTPAPI).
func init() { buzz.NewHTTPAPI = func() buzz.Feature { return httpapi.New() } }
