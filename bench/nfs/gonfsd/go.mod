module strata-bench-gonfsd

go 1.26.8

require (
	github.com/mit-pdos/go-journal v0.4.0
	github.com/mit-pdos/go-nfsd v0.6.0
	github.com/tchajed/goose v0.2.0
	github.com/zeldovich/go-rpcgen v0.1.4
)

require (
	github.com/rodaine/table v1.0.1 // indirect
	github.com/tchajed/marshal v0.1.0 // indirect
	golang.org/x/sys v0.0.0-20210514084401-e8d321eab015 // indirect
)

tool (
	github.com/mit-pdos/go-nfsd/cmd/clnt-null
	github.com/mit-pdos/go-nfsd/cmd/clnt-smallfile
	github.com/mit-pdos/go-nfsd/cmd/go-nfsd
)
