/// The properties Coaty 2 defines for the objects IO routing works with (Coaty JS `object.ts`, `io-node.ts`,
/// `io-point.ts`). Objects may carry more: applications add their own, as IoContexts usually do.
extension CoatyObject {
    public static let definedProperties: [String] = [
        "coreType", "objectType", "objectId", "name", "externalId", "parentObjectId", "locationId", "isDeactivated",
    ]
}

extension IoSource {
    public static let definedProperties: [String] =
        CoatyObject.definedProperties + [
            "valueType", "updateStrategy", "updateRate", "useRawIoValues", "externalRoute",
        ]
}

extension IoActor {
    public static let definedProperties: [String] =
        CoatyObject.definedProperties + ["valueType", "updateRate", "useRawIoValues", "externalRoute"]
}

extension IoNode {
    public static let definedProperties: [String] =
        CoatyObject.definedProperties + ["ioSources", "ioActors", "characteristics"]
}
