module strata/bench/journal/gojournal

go 1.26.8

require (
	github.com/goose-lang/goose v0.6.2
	github.com/mit-pdos/go-journal v0.5.4
	golang.org/x/sys v0.22.0
)

require (
	github.com/goose-lang/std v0.3.3 // indirect
	github.com/tchajed/marshal v0.6.1 // indirect
)
