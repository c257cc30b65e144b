package runtime

// CloseBuckets closes the storage clients, whose idle connections would
// otherwise outlive a test's S3 server.
var CloseBuckets = closeBuckets
