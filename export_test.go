package informers

// ResourceFor exposes resourceFor to the tests.
var ResourceFor = resourceFor
