package api

// LeastRole is leastRole, for the external tests of the role table.
var LeastRole = leastRole
