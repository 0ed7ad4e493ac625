// Frames captured from Coaty JS 2.4.1 agents on a real broker (topic, payload as sent).
// IoValue frames are left out: their payloads are bare values or raw bytes, tested separately.
let capturedCoatyJSFrames: [(topic: String, payload: String)] = [
    (
        "coaty/3/-/ADV:Identity/11111111-1111-4111-8111-111111111111",
        #"{"object":{"objectId":"11111111-1111-4111-8111-111111111111","name":"Identity Probe","objectType":"coaty.Identity","coreType":"Identity"}}"#
    ),
    ("coaty/3/-/DAD/11111111-1111-4111-8111-111111111111", #"{"objectIds":["11111111-1111-4111-8111-111111111111"]}"#),
    (
        "coaty/3/-/ADV:Identity/33333333-3333-4333-8333-333333333333",
        #"{"object":{"objectId":"33333333-3333-4333-8333-333333333333","name":"Actor Agent","objectType":"coaty.Identity","coreType":"Identity"}}"#
    ),
    (
        "coaty/3/-/ADV:IoNode/33333333-3333-4333-8333-333333333333",
        #"{"object":{"name":"TemperatureMeasurement","coreType":"IoNode","objectType":"coaty.IoNode","objectId":"de19e85a-b64c-4404-b425-ec383ccb30a8","parentObjectId":"33333333-3333-4333-8333-333333333333","ioSources":[],"ioActors":[{"name":"Temperature Actor 1","coreType":"IoActor","objectType":"coaty.IoActor","objectId":"a731fc40-c0f8-486f-b5b6-b653c3cabaea","valueType":"coaty.test.Temperature[Celsius]"},{"name":"Raw Actor 2","coreType":"IoActor","objectType":"coaty.IoActor","objectId":"a60a74f3-3d26-446f-a358-911867544944","valueType":"coaty.test.RawBytes","useRawIoValues":true}],"characteristics":{"isResponsibleForOperatingState":"normal"}}}"#
    ),
    (
        "coaty/3/-/ADV:Identity/22222222-2222-4222-8222-222222222222",
        #"{"object":{"objectId":"22222222-2222-4222-8222-222222222222","name":"Source Agent","objectType":"coaty.Identity","coreType":"Identity"}}"#
    ),
    (
        "coaty/3/-/ADV:IoNode/22222222-2222-4222-8222-222222222222",
        #"{"object":{"name":"TemperatureMeasurement","coreType":"IoNode","objectType":"coaty.IoNode","objectId":"d0d336d1-7074-4453-be36-4a4f29d2b414","parentObjectId":"22222222-2222-4222-8222-222222222222","ioSources":[{"name":"Temperature Source 1","coreType":"IoSource","objectType":"coaty.IoSource","objectId":"c547e5cd-ef99-4ccd-b109-fc472fc2d421","valueType":"coaty.test.Temperature[Celsius]"},{"name":"Raw Source 2","coreType":"IoSource","objectType":"coaty.IoSource","objectId":"2e9949f7-a8ef-435b-88a9-527c0a9414c3","valueType":"coaty.test.RawBytes","useRawIoValues":true}],"ioActors":[]}}"#
    ),
    (
        "coaty/3/-/ADV:Identity/44444444-4444-4444-8444-444444444444",
        #"{"object":{"objectId":"44444444-4444-4444-8444-444444444444","name":"Router Agent","objectType":"coaty.Identity","coreType":"Identity"}}"#
    ),
    (
        "coaty/3/-/DSC/44444444-4444-4444-8444-444444444444/0aa93cd8-e3fa-40a1-bfd0-6ffc6c8dda81",
        #"{"coreTypes":["IoNode"]}"#
    ),
    (
        "coaty/3/-/ADV:IoContext/44444444-4444-4444-8444-444444444444",
        #"{"object":{"name":"TemperatureMeasurement","coreType":"IoContext","objectType":"coaty.test.TemperatureIoContext","objectId":"55555555-5555-4555-8555-555555555555","operatingState":"normal","parentObjectId":"44444444-4444-4444-8444-444444444444"}}"#
    ),
    (
        "coaty/3/-/ADV::coaty.test.TemperatureIoContext/44444444-4444-4444-8444-444444444444",
        #"{"object":{"name":"TemperatureMeasurement","coreType":"IoContext","objectType":"coaty.test.TemperatureIoContext","objectId":"55555555-5555-4555-8555-555555555555","operatingState":"normal","parentObjectId":"44444444-4444-4444-8444-444444444444"}}"#
    ),
    (
        "coaty/3/-/RSV/33333333-3333-4333-8333-333333333333/0aa93cd8-e3fa-40a1-bfd0-6ffc6c8dda81",
        #"{"object":{"name":"TemperatureMeasurement","coreType":"IoNode","objectType":"coaty.IoNode","objectId":"de19e85a-b64c-4404-b425-ec383ccb30a8","parentObjectId":"33333333-3333-4333-8333-333333333333","ioSources":[],"ioActors":[{"name":"Temperature Actor 1","coreType":"IoActor","objectType":"coaty.IoActor","objectId":"a731fc40-c0f8-486f-b5b6-b653c3cabaea","valueType":"coaty.test.Temperature[Celsius]"},{"name":"Raw Actor 2","coreType":"IoActor","objectType":"coaty.IoActor","objectId":"a60a74f3-3d26-446f-a358-911867544944","valueType":"coaty.test.RawBytes","useRawIoValues":true}],"characteristics":{"isResponsibleForOperatingState":"normal"}}}"#
    ),
    (
        "coaty/3/-/RSV/22222222-2222-4222-8222-222222222222/0aa93cd8-e3fa-40a1-bfd0-6ffc6c8dda81",
        #"{"object":{"name":"TemperatureMeasurement","coreType":"IoNode","objectType":"coaty.IoNode","objectId":"d0d336d1-7074-4453-be36-4a4f29d2b414","parentObjectId":"22222222-2222-4222-8222-222222222222","ioSources":[{"name":"Temperature Source 1","coreType":"IoSource","objectType":"coaty.IoSource","objectId":"c547e5cd-ef99-4ccd-b109-fc472fc2d421","valueType":"coaty.test.Temperature[Celsius]"},{"name":"Raw Source 2","coreType":"IoSource","objectType":"coaty.IoSource","objectId":"2e9949f7-a8ef-435b-88a9-527c0a9414c3","valueType":"coaty.test.RawBytes","useRawIoValues":true}],"ioActors":[]}}"#
    ),
    (
        "coaty/3/-/ASC:TemperatureMeasurement/44444444-4444-4444-8444-444444444444",
        #"{"ioSourceId":"c547e5cd-ef99-4ccd-b109-fc472fc2d421","ioActorId":"a731fc40-c0f8-486f-b5b6-b653c3cabaea","associatingRoute":"coaty/3/-/IOV/c547e5cd-ef99-4ccd-b109-fc472fc2d421"}"#
    ),
    (
        "coaty/3/-/ASC:TemperatureMeasurement/44444444-4444-4444-8444-444444444444",
        #"{"ioSourceId":"2e9949f7-a8ef-435b-88a9-527c0a9414c3","ioActorId":"a60a74f3-3d26-446f-a358-911867544944","associatingRoute":"coaty/3/-/IOV/2e9949f7-a8ef-435b-88a9-527c0a9414c3"}"#
    ),
    (
        "coaty/3/-/DSC/22222222-2222-4222-8222-222222222222/fc30da9c-1582-4c72-b705-746798fe5377",
        #"{"objectTypes":["coaty.test.TemperatureIoContext"]}"#
    ),
    (
        "coaty/3/-/RSV/44444444-4444-4444-8444-444444444444/fc30da9c-1582-4c72-b705-746798fe5377",
        #"{"object":{"name":"TemperatureMeasurement","coreType":"IoContext","objectType":"coaty.test.TemperatureIoContext","objectId":"55555555-5555-4555-8555-555555555555","operatingState":"normal","parentObjectId":"44444444-4444-4444-8444-444444444444"}}"#
    ),
    (
        "coaty/3/-/UPD::coaty.test.TemperatureIoContext/22222222-2222-4222-8222-222222222222/79ad88ff-0737-4d8b-9cda-8d4edbfb6f9c",
        #"{"object":{"name":"TemperatureMeasurement","coreType":"IoContext","objectType":"coaty.test.TemperatureIoContext","objectId":"55555555-5555-4555-8555-555555555555","operatingState":"emergency","parentObjectId":"44444444-4444-4444-8444-444444444444"}}"#
    ),
    (
        "coaty/3/-/UPD:IoContext/22222222-2222-4222-8222-222222222222/e1dd7a05-3b57-4a68-a5ac-e800f5a2a3cd",
        #"{"object":{"name":"TemperatureMeasurement","coreType":"IoContext","objectType":"coaty.test.TemperatureIoContext","objectId":"55555555-5555-4555-8555-555555555555","operatingState":"emergency","parentObjectId":"44444444-4444-4444-8444-444444444444"}}"#
    ),
    (
        "coaty/3/-/ADV:IoContext/44444444-4444-4444-8444-444444444444",
        #"{"object":{"name":"TemperatureMeasurement","coreType":"IoContext","objectType":"coaty.test.TemperatureIoContext","objectId":"55555555-5555-4555-8555-555555555555","operatingState":"emergency","parentObjectId":"44444444-4444-4444-8444-444444444444"}}"#
    ),
    (
        "coaty/3/-/ADV::coaty.test.TemperatureIoContext/44444444-4444-4444-8444-444444444444",
        #"{"object":{"name":"TemperatureMeasurement","coreType":"IoContext","objectType":"coaty.test.TemperatureIoContext","objectId":"55555555-5555-4555-8555-555555555555","operatingState":"emergency","parentObjectId":"44444444-4444-4444-8444-444444444444"}}"#
    ),
    (
        "coaty/3/-/ASC:TemperatureMeasurement/44444444-4444-4444-8444-444444444444",
        #"{"ioSourceId":"c547e5cd-ef99-4ccd-b109-fc472fc2d421","ioActorId":"a731fc40-c0f8-486f-b5b6-b653c3cabaea"}"#
    ),
    (
        "coaty/3/-/CPL/44444444-4444-4444-8444-444444444444/e1dd7a05-3b57-4a68-a5ac-e800f5a2a3cd",
        #"{"object":{"name":"TemperatureMeasurement","coreType":"IoContext","objectType":"coaty.test.TemperatureIoContext","objectId":"55555555-5555-4555-8555-555555555555","operatingState":"emergency","parentObjectId":"44444444-4444-4444-8444-444444444444"}}"#
    ),
    (
        "coaty/3/-/ASC:TemperatureMeasurement/44444444-4444-4444-8444-444444444444",
        #"{"ioSourceId":"2e9949f7-a8ef-435b-88a9-527c0a9414c3","ioActorId":"a60a74f3-3d26-446f-a358-911867544944"}"#
    ),
    ("coaty/3/-/DAD/44444444-4444-4444-8444-444444444444", #"{"objectIds":["44444444-4444-4444-8444-444444444444"]}"#),
    (
        "coaty/3/-/DAD/22222222-2222-4222-8222-222222222222",
        #"{"objectIds":["22222222-2222-4222-8222-222222222222","d0d336d1-7074-4453-be36-4a4f29d2b414"]}"#
    ),
    (
        "coaty/3/-/DAD/33333333-3333-4333-8333-333333333333",
        #"{"objectIds":["33333333-3333-4333-8333-333333333333","de19e85a-b64c-4404-b425-ec383ccb30a8"]}"#
    ),
    (
        "coaty/3/-/ADV:Identity/66666666-6666-4666-8666-666666666666",
        #"{"object":{"objectId":"66666666-6666-4666-8666-666666666666","name":"Foreign-driven Agent","objectType":"coaty.Identity","coreType":"Identity"}}"#
    ),
    (
        "coaty/3/-/ADV:IoNode/66666666-6666-4666-8666-666666666666",
        #"{"object":{"name":"TemperatureMeasurement","coreType":"IoNode","objectType":"coaty.IoNode","objectId":"8e19f423-8a5d-46c4-a8a1-e7812335ca8f","parentObjectId":"66666666-6666-4666-8666-666666666666","ioSources":[{"name":"Temperature Source 1","coreType":"IoSource","objectType":"coaty.IoSource","objectId":"c547e5cd-ef99-4ccd-b109-fc472fc2d421","valueType":"coaty.test.Temperature[Celsius]"}],"ioActors":[{"name":"Temperature Actor 1","coreType":"IoActor","objectType":"coaty.IoActor","objectId":"a731fc40-c0f8-486f-b5b6-b653c3cabaea","valueType":"coaty.test.Temperature[Celsius]"}]}}"#
    ),
    (
        "coaty/3/-/DSC/77777777-7777-4777-8777-777777777777/88888888-8888-4888-8888-888888888888",
        #"{"coreTypes":["Identity"]}"#
    ),
    (
        "coaty/3/-/RSV/66666666-6666-4666-8666-666666666666/88888888-8888-4888-8888-888888888888",
        #"{"object":{"objectId":"66666666-6666-4666-8666-666666666666","name":"Foreign-driven Agent","objectType":"coaty.Identity","coreType":"Identity"}}"#
    ),
    (
        "coaty/3/-/DSC/77777777-7777-4777-8777-777777777777/99999999-9999-4999-8999-999999999999",
        #"{"coreTypes":["IoNode"]}"#
    ),
    (
        "coaty/3/-/RSV/66666666-6666-4666-8666-666666666666/99999999-9999-4999-8999-999999999999",
        #"{"object":{"name":"TemperatureMeasurement","coreType":"IoNode","objectType":"coaty.IoNode","objectId":"8e19f423-8a5d-46c4-a8a1-e7812335ca8f","parentObjectId":"66666666-6666-4666-8666-666666666666","ioSources":[{"name":"Temperature Source 1","coreType":"IoSource","objectType":"coaty.IoSource","objectId":"c547e5cd-ef99-4ccd-b109-fc472fc2d421","valueType":"coaty.test.Temperature[Celsius]"}],"ioActors":[{"name":"Temperature Actor 1","coreType":"IoActor","objectType":"coaty.IoActor","objectId":"a731fc40-c0f8-486f-b5b6-b653c3cabaea","valueType":"coaty.test.Temperature[Celsius]"}]}}"#
    ),
    (
        "coaty/3/-/ASC:TemperatureMeasurement/77777777-7777-4777-8777-777777777777",
        #"{"ioSourceId":"c547e5cd-ef99-4ccd-b109-fc472fc2d421","ioActorId":"a731fc40-c0f8-486f-b5b6-b653c3cabaea","associatingRoute":"coaty/3/-/IOV/c547e5cd-ef99-4ccd-b109-fc472fc2d421"}"#
    ),
    (
        "coaty/3/-/ASC:TemperatureMeasurement/77777777-7777-4777-8777-777777777777",
        #"{"ioSourceId":"c547e5cd-ef99-4ccd-b109-fc472fc2d421","ioActorId":"a731fc40-c0f8-486f-b5b6-b653c3cabaea"}"#
    ),
    (
        "coaty/3/-/DAD/66666666-6666-4666-8666-666666666666",
        #"{"objectIds":["66666666-6666-4666-8666-666666666666","8e19f423-8a5d-46c4-a8a1-e7812335ca8f"]}"#
    ),
]
