// Command apirecord writes or checks the record of the library's public
// API in api/, one file per public package: every exported declaration
// with its signature, without doc text.
//
//	go run ./internal/cmd/apirecord -w   # rewrite the record (make api)
//	go run ./internal/cmd/apirecord      # print what differs, exit 1 if anything
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/kubetyped/informers/internal/apirecord"
)

func main() {
	write := flag.Bool("w", false, "rewrite the record rather than check it")
	flag.Parse()
	wd, err := os.Getwd()
	if err == nil {
		var root string
		if root, err = apirecord.Root(wd); err == nil {
			if *write {
				err = apirecord.Write(root)
			} else {
				var diff string
				if diff, err = apirecord.Check(root); err == nil && diff != "" {
					fmt.Print(diff)
					os.Exit(1)
				}
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}
