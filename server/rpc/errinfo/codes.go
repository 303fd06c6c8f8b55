package errinfo

// Error code names carried in the google.rpc.ErrorInfo metadata "code". Clients
// (the JS SDK in particular) branch on these names, not on the message text.
const (
	CodeClientNotFound      = "ErrClientNotFound"
	CodeClientNotActivated  = "ErrClientNotActivated"
	CodeDocumentNotFound    = "ErrDocumentNotFound"
	CodeDocumentNotAttached = "ErrDocumentNotAttached"
	CodeDocumentRemoved     = "ErrDocumentRemoved"
	CodeInvalidClientSeq    = "ErrInvalidClientSeq"
	CodeInvalidChangePack   = "ErrInvalidChangePack"
	CodeShuttingDown        = "ErrShuttingDown"
	CodeUnavailable         = "ErrUnavailable"
	CodeInvalidArgument     = "ErrInvalidArgument"
	CodeRequestTooLarge     = "ErrRequestTooLarge"
	CodeUnimplemented       = "ErrUnimplemented"
	CodeInternal            = "ErrInternal"
	CodeCanceled            = "ErrCanceled"
	CodeDeadlineExceeded    = "ErrDeadlineExceeded"
	CodeWrongNode           = "ErrWrongNode"
	CodePermissionDenied    = "ErrPermissionDenied"
	CodeInvalidChannelKey   = "ErrInvalidChannelKey"
	CodePayloadTooLarge     = "ErrPayloadTooLarge"
	CodeSessionNotFound     = "ErrSessionNotFound"
	// CodeUnauthenticated refuses a call for its API key: the code the SDK
	// acts on (it asks its authTokenInjector again and retries).
	CodeUnauthenticated = "ErrUnauthenticated"
	// CodeProjectNotFound refuses an API key no project has, not_found as
	// upstream answers it: the SDK gives up instead of asking its
	// authTokenInjector for a token that cannot help.
	CodeProjectNotFound = "ErrProjectNotFound"
	// A pushed change that does not apply gets the name of its problem.
	CodeInvalidOperation = "ErrInvalidOperation"
	CodeElementNotFound  = "ErrElementNotFound"
	CodeWrongElementType = "ErrWrongElementType"
	CodeRemoveRoot       = "ErrRemoveRoot"
	CodeInvalidChange    = "ErrInvalidChange"
	// CodeDocumentSizeExceedsLimit is the SDK's name for a document past
	// max_size_per_document.
	CodeDocumentSizeExceedsLimit = "ErrDocumentSizeExceedsLimit"
	// CodeTooManySubscribers is the SDK's name for a Watch past the
	// project's subscribers per document.
	CodeTooManySubscribers = "ErrTooManySubscribers"
	// CodeRevisionNotFound is upstream's name for a revision the document
	// does not have.
	CodeRevisionNotFound = "ErrRevisionNotFound"
	// CodeFailedPrecondition names a call the state of its subject refuses.
	CodeFailedPrecondition = "ErrFailedPrecondition"
	// CodeEpochMismatch is the SDK's name for a PushPull of a client that
	// attached before a compaction: the SDK publishes its epoch-mismatch
	// event and stops syncing the document.
	CodeEpochMismatch = "ErrEpochMismatch"
)

// Error code names of the per-client bounds (package limits).
const (
	CodeMetadataTooLarge    = "ErrMetadataTooLarge"
	CodeTooManyWatchStreams = "ErrTooManyWatchStreams"
	CodeTooManyAttachments  = "ErrTooManyAttachments"
)

// CodePresenceTooLarge is the ErrorInfo code of a change whose presence is
// over the RPC layer's bound of a presence.
const CodePresenceTooLarge = "ErrPresenceTooLarge"

// Error codes of schemas, as upstream names them.
const (
	CodeSchemaNotFound         = "ErrSchemaNotFound"
	CodeInvalidSchemaKey       = "ErrInvalidSchemaKey"
	CodeSchemaValidationFailed = "ErrSchemaValidationFailed"
)

// CodeDocumentAttached is upstream's name for an admin's removal of a
// document clients still have attached.
const CodeDocumentAttached = "ErrDocumentAttached"
