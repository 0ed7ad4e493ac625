// The library's testing helpers (InMemoryBroker, ManualClock, Recorder, LogLines...) moved to the CoatyTesting
// product; the suites that import this module see them as before.
@_exported import CoatyTesting
