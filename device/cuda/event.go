package cuda

// Context is the context the event was created in: an event goes back to
// that context's pool, and is recorded only on that context's streams
// (a stream of any context or device may wait on it).
func (e *Event) Context() *Context { return e.ctx }
