package pgstore

// SearchPath is the search_path the store's connections and every SQL
// function of its schema (migration 0008) run with. The store names every
// object of its own with its schema, so nothing of the store is looked up
// on the path; what is looked up (functions, operators, types) must come
// from PostgreSQL itself. A role's or database's default search_path that
// put a schema of its own before pg_catalog would otherwise have its
// same-named functions and operators (an =, a pg_notify) run in place of
// the built-in ones in the store's statements and triggers. public is left
// out: where untrusted roles may create there (PostgreSQL 14 and older by
// default) an overload there can still be chosen over pg_catalog's.
const SearchPath = "pg_catalog, pg_temp"

// pinSearchPath sets SearchPath in the startup parameters of a connection
// unless its URL names a search_path parameter (the caller's choice, kept).
// A search_path given inside options (options=-c search_path=…, or
// PGOPTIONS) is overridden: the server applies this parameter after it.
func pinSearchPath(params map[string]string) {
	if _, set := params["search_path"]; !set {
		params["search_path"] = SearchPath
	}
}
