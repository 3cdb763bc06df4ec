package main

import (
	"testing"

	"github.com/kubetyped/informers/examples/internal/podcounttest"
	"github.com/kubetyped/informers/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestPodCount(t *testing.T) { podcounttest.Check(t, run) }
