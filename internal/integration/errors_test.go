package integration

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// ignoreRaces drops the errors that concurrent writers to the same objects
// expect: the object is gone, already there, or changed meanwhile.
func ignoreRaces(err error) error {
	if apierrors.IsNotFound(err) || apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}
