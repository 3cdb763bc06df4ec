package demo

import (
	"context"
	"log"
	"time"
)

// Step is one thing a demo does, and what it says of it.
type Step struct {
	Say string
	Do  func() error
}

// Play does steps in turn, one every two seconds, until they are done or
// ctx ends, saying each on logger with its error if it fails.
func Play(ctx context.Context, logger *log.Logger, steps []Step) {
	for _, step := range steps {
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
		logger.Printf("demo: %s", step.Say)
		if err := step.Do(); err != nil && ctx.Err() == nil {
			logger.Printf("demo: %v", err)
		}
	}
	logger.Printf("demo: done; the controller runs on until Ctrl-C")
}
