import CoatyJSON
import CoatyMQTT
import CoatyModel

/// The typed event API: one-way publish and observe, requests with response streams, and responders.
extension CommunicationManager {
    // MARK: - Advertise, Deadvertise, Channel, Associate

    // The one-way publications (and a request's `respond`) wait for nothing and run on the caller's executor
    // (`nonisolated(nonsending)`): a plain nonisolated async function switches to the generic executor as it starts
    // and back as it returns, two task switches per publication, each taking the task's status record lock when the
    // task prefers an executor (a responder on the connection's thread).

    /// Publishes on the core-type topic and, for application object types, on the object-type topic too.
    nonisolated(nonsending) public func publishAdvertise(_ event: AdvertiseEvent) async throws(CoatyError) {
        guard CoatyName.isValid(event.object.objectType) else { throw .invalidName(event.object.objectType) }
        publish(.advertise(event))
    }

    /// Advertisements of objects of a core type.
    public func observeAdvertise(coreType: CoreType) -> ObservationStream<ReceivedEvent<AdvertiseEvent>> {
        observe(.advertise, filter: coreType.rawValue) { topic, event in
            guard case .advertise(let advertise) = event else { return nil }
            return ReceivedEvent(sourceId: topic.sourceId, namespace: topic.namespace, event: advertise)
        }
    }

    /// Advertisements of objects of an object type. For a core object type (`coaty.IoNode`) this observes the
    /// core-type topic and keeps the objects of exactly that type, as Coaty JS does.
    public func observeAdvertise(objectType: String) throws(CoatyError) -> ObservationStream<
        ReceivedEvent<AdvertiseEvent>
    > {
        guard CoatyName.isValid(objectType) else { throw .invalidName(objectType) }
        let filter = CoreType(coreObjectType: objectType).map(\.rawValue) ?? ":" + objectType
        return observe(.advertise, filter: filter) { topic, event in
            guard case .advertise(let advertise) = event, advertise.object.objectType == objectType else { return nil }
            return ReceivedEvent(sourceId: topic.sourceId, namespace: topic.namespace, event: advertise)
        }
    }

    nonisolated(nonsending) public func publishDeadvertise(_ event: DeadvertiseEvent) async {
        publish(.deadvertise(event))
    }

    public func observeDeadvertise() -> ObservationStream<ReceivedEvent<DeadvertiseEvent>> {
        observe(.deadvertise) { topic, event in
            guard case .deadvertise(let deadvertise) = event else { return nil }
            return ReceivedEvent(sourceId: topic.sourceId, namespace: topic.namespace, event: deadvertise)
        }
    }

    nonisolated(nonsending) public func publishChannel(_ event: ChannelEvent) async throws(CoatyError) {
        guard CoatyName.isValid(event.channelId) else { throw .invalidName(event.channelId) }
        publish(.channel(event))
    }

    public func observeChannel(_ channelId: String) throws(CoatyError) -> ObservationStream<ReceivedEvent<ChannelEvent>>
    {
        guard CoatyName.isValid(channelId) else { throw .invalidName(channelId) }
        return observe(.channel, filter: channelId) { topic, event in
            guard case .channel(let channel) = event else { return nil }
            return ReceivedEvent(sourceId: topic.sourceId, namespace: topic.namespace, event: channel)
        }
    }

    /// Publishes an association or disassociation decided by a router.
    nonisolated(nonsending) public func publishAssociate(_ event: AssociateEvent) async throws(CoatyError) {
        guard CoatyName.isValid(event.ioContextName) else { throw .invalidName(event.ioContextName) }
        publish(.associate(event))
    }

    public func observeAssociate(ioContextName: String) throws(CoatyError) -> ObservationStream<
        ReceivedEvent<AssociateEvent>
    > {
        guard CoatyName.isValid(ioContextName) else { throw .invalidName(ioContextName) }
        return observe(.associate, filter: ioContextName) { topic, event in
            guard case .associate(let associate) = event else { return nil }
            return ReceivedEvent(sourceId: topic.sourceId, namespace: topic.namespace, event: associate)
        }
    }

    // MARK: - Requests

    /// Publishes the Discover when iteration starts and yields the valid Resolves until the consumer stops,
    /// the timeout passes or the manager stops. Each iteration is a new request.
    public func publishDiscover(_ event: DiscoverEvent, timeout: Duration? = nil) -> ResponseStream<ResolveEvent> {
        request(.discover(event), timeout: timeout) { response in
            guard case .resolve(let resolve) = response, event.accepts(resolve) else { return nil }
            return resolve
        }
    }

    /// Publishes the Update (twice, with separate correlation ids, for application object types) and yields the
    /// Completes for the same object.
    public func publishUpdate(_ event: UpdateEvent, timeout: Duration? = nil) throws(CoatyError) -> ResponseStream<
        CompleteEvent
    > {
        guard CoatyName.isValid(event.object.objectType) else { throw .invalidName(event.object.objectType) }
        return request(.update(event), timeout: timeout) { response in
            guard case .complete(let complete) = response, event.accepts(complete) else { return nil }
            return complete
        }
    }

    /// Publishes the Query and yields the Retrieves whose objects are of the queried types.
    public func publishQuery(_ event: QueryEvent, timeout: Duration? = nil) -> ResponseStream<RetrieveEvent> {
        request(.query(event), timeout: timeout) { response in
            guard case .retrieve(let retrieve) = response, event.accepts(retrieve) else { return nil }
            return retrieve
        }
    }

    /// Calls a remote operation and yields the Returns of every agent that answers.
    public func publishCall(_ event: CallEvent, timeout: Duration? = nil) throws(CoatyError) -> ResponseStream<
        ReturnEvent
    > {
        guard CoatyName.isValid(event.operation) else { throw .invalidName(event.operation) }
        return request(.call(event), timeout: timeout) { response in
            guard case .returnEvent(let returned) = response else { return nil }
            return returned
        }
    }

    func request<Response: Sendable>(
        _ event: CoatyEvent, timeout: Duration?, accept: @escaping @Sendable (CoatyEvent) -> Response?
    ) -> ResponseStream<Response> {
        ResponseStream(manager: self, event: event, timeout: timeout, accept: accept) { manager, request in
            manager.startRequest(request.event, timeout: request.timeout, accept: request.accept)
        }
    }

    /// Publishes the request of a `ResponseStream` as its iteration starts; see there.
    fileprivate func startRequest<Response: Sendable>(
        _ event: CoatyEvent, timeout: Duration?, accept: @escaping @Sendable (CoatyEvent) -> Response?
    ) -> ObservationStream<ReceivedEvent<Response>> {
        let (stream, continuation) = ObservationStream.makeStream(of: ReceivedEvent<Response>.self)
        guard let responseType = event.eventType.responseType else {
            continuation.finish()
            return stream
        }
        let (filter, secondFilter) = event.topicFilter
        // One closure for responses and the end, made here where `Response` is known, so that it runs specialized;
        // a deliver and a finish closure were an allocation each.
        let registered = addResponseObservers(of: responseType, isPublishedTwice: secondFilter != nil) { signal in
            guard case .response(let topic, let response) = signal else {
                continuation.finish()
                return true
            }
            guard let accepted = accept(response) else { return false }
            continuation.yield(ReceivedEvent(sourceId: topic.sourceId, namespace: topic.namespace, event: accepted))
            return true
        }
        guard let observers = registered else {
            refuseRequest(event.eventType)
            continuation.finish()
            return stream
        }
        let payload = event.serializedBytes()
        let message = MQTTMessage(
            topic: topic(event.eventType, filter: filter, correlationId: observers.first),
            payload: payload)
        if let secondFilter, let second = observers.second {
            enqueue([
                message,
                MQTTMessage(
                    topic: topic(event.eventType, filter: secondFilter, correlationId: second),
                    payload: payload),
            ])
        } else {
            enqueue(message)
        }
        // After the request, so that it goes out first: spares refilled, ended requests' topics given up.
        if observers.needsUpkeep { scheduleResponseUpkeep() }
        let timer = timeout.map { timeout in
            Task {
                try? await Task.sleep(for: timeout)
                continuation.finish()
            }
        }
        let (first, second) = (observers.first, observers.second)
        continuation.onTermination { [weak self] in
            timer?.cancel()
            self?.removeResponseObservers(first, second)
        }
        return stream
    }

    /// Hands a response to the observer of its request, if any is left (one that ended finds none: dropped).
    func deliverResponse(_ topic: CoatyTopic, _ event: CoatyEvent) {
        guard let correlationId = topic.correlationId,
            let observer = state.withLock({ $0.responseObservers[correlationId] }),
            observer.responseType == topic.eventType
        else { return }
        if !observer.receive(.response(topic, event)) { rejectResponse(topic) }
    }

    /// A request beyond `maximumPendingRequests`: not published, its responses end at once; counted and logged.
    private func refuseRequest(_ eventType: CoatyEventType) {
        counters.requestsRefused.add(1)
        requestsRefusedCounter.increment()
        guard case .log(let suppressed) = refusedRequestsLogBudget.admit() else { return }
        let quiet = suppressed > 0 ? " (\(suppressed) more refused without a log line)" : ""
        let limit = options.maximumPendingRequests
        logger.warning(
            "refused a \(eventType.rawValue) request: \(limit) requests are waiting for responses already\(quiet)")
    }

    private func rejectResponse(_ topic: CoatyTopic) {
        logger.debug("dropped a response that does not answer its request: \(topic)")
        incrementRejectedResponses()
    }

    // MARK: - Responders

    /// Discover requests from any agent (the manager itself answers those for its identity and IO nodes).
    public func observeDiscover() -> ObservationStream<DiscoverRequest> {
        observe(.discover) { [weak self] topic, event in
            guard case .discover(let discover) = event, let self, let correlationId = topic.correlationId else {
                return nil
            }
            return DiscoverRequest(
                sourceId: topic.sourceId, namespace: topic.namespace, correlationId: correlationId, event: discover,
                manager: self, makeEvent: { .resolve($0) })
        }
    }

    /// Query requests from any agent.
    public func observeQuery() -> ObservationStream<QueryRequest> {
        observe(.query) { [weak self] topic, event in
            guard case .query(let query) = event, let self, let correlationId = topic.correlationId else { return nil }
            return QueryRequest(
                sourceId: topic.sourceId, namespace: topic.namespace, correlationId: correlationId, event: query,
                manager: self, makeEvent: { .retrieve($0) })
        }
    }

    /// Calls of an operation. With a context object, only calls whose filter matches it arrive; without one,
    /// every call (Coaty 2's rule: a call without a filter does not reach observers with a context).
    public func observeCall(operation: String, context: CoatyObject? = nil) throws(CoatyError) -> ObservationStream<
        CallRequest
    > {
        guard CoatyName.isValid(operation) else { throw .invalidName(operation) }
        return observe(.call, filter: operation) { [weak self] topic, event in
            guard case .call(let call) = event, call.isDelivered(toObserverWith: context), let self,
                let correlationId = topic.correlationId
            else { return nil }
            return CallRequest(
                sourceId: topic.sourceId, namespace: topic.namespace, correlationId: correlationId, event: call,
                manager: self, makeEvent: { .returnEvent($0) })
        }
    }

    /// Update requests for objects of a core type.
    public func observeUpdate(coreType: CoreType) -> ObservationStream<UpdateRequest> {
        observeUpdate(filter: coreType.rawValue) { _ in true }
    }

    /// Update requests for objects of an object type (core object types observe the core-type topic).
    public func observeUpdate(objectType: String) throws(CoatyError) -> ObservationStream<UpdateRequest> {
        guard CoatyName.isValid(objectType) else { throw .invalidName(objectType) }
        let filter = CoreType(coreObjectType: objectType).map(\.rawValue) ?? ":" + objectType
        return observeUpdate(filter: filter) { $0.object.objectType == objectType }
    }

    private func observeUpdate(filter: String, where include: @escaping @Sendable (UpdateEvent) -> Bool)
        -> ObservationStream<UpdateRequest>
    {
        observe(.update, filter: filter) { [weak self] topic, event in
            guard case .update(let update) = event, include(update), let self, let correlationId = topic.correlationId
            else { return nil }
            return UpdateRequest(
                sourceId: topic.sourceId, namespace: topic.namespace, correlationId: correlationId, event: update,
                manager: self,
                makeEvent: { (complete: CompleteEvent) throws(CoatyError) in
                    guard update.accepts(complete) else { throw .invalidName("Complete for another object") }
                    return .complete(complete)
                })
        }
    }
}

/// The responses to one request. Iterating publishes the request (after subscribing to its responses); the
/// sequence ends when the consumer stops, the timeout passes or the manager stops.
public struct ResponseStream<Response: Sendable>: AsyncSequence, Sendable {
    public typealias Element = ReceivedEvent<Response>
    /// The request's parts as fields, not a closure that captures them: that closure's context was an allocation of
    /// its own with every request. The manager is held strongly for the stream's short life: a weak reference was
    /// one more reference count of the manager's side table made, loaded and dropped with every request.
    private let manager: CommunicationManager
    fileprivate let event: CoatyEvent
    fileprivate let timeout: Duration?
    fileprivate let accept: @Sendable (CoatyEvent) -> Response?
    /// `startRequest`, made where `Response` is known, so that it runs specialized: called from the generic
    /// `makeAsyncIterator` it ran as generic code (metadata looked up per request).
    private let start: @Sendable (CommunicationManager, ResponseStream) -> ObservationStream<Element>

    init(
        manager: CommunicationManager, event: CoatyEvent, timeout: Duration?,
        accept: @escaping @Sendable (CoatyEvent) -> Response?,
        start: @escaping @Sendable (CommunicationManager, ResponseStream) -> ObservationStream<Element>
    ) {
        self.manager = manager
        self.event = event
        self.timeout = timeout
        self.accept = accept
        self.start = start
    }

    public func makeAsyncIterator() -> ObservationStream<Element>.Iterator {
        start(manager, self).makeAsyncIterator()
    }
}

/// What the observer of a request's responses is handed: a response, or the end of the responses (the manager stops).
enum ResponseSignal {
    case response(CoatyTopic, CoatyEvent)
    case end
}
