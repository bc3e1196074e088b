/*
 * The driver entry points this library implements, for cuGetProcAddress:
 *   EP(base name, CUDA version that introduced this variant, exported symbol)
 * A request for (name, version) gets the newest variant not newer than the version.
 * Every symbol here is a real export too, and tests/test_procaddr.c checks that each
 * entry resolves to the same function through dlsym and through cuGetProcAddress.
 * Entry points not listed are exported as stubs that return CUDA_ERROR_NOT_SUPPORTED.
 */
#define DS_ENTRY_POINTS(EP)                                               \
    EP(cuInit, 2000, cuInit)                                              \
    EP(cuDriverGetVersion, 2020, cuDriverGetVersion)                      \
    EP(cuGetErrorName, 6000, cuGetErrorName)                              \
    EP(cuGetErrorString, 6000, cuGetErrorString)                          \
    EP(cuGetProcAddress, 11030, cuGetProcAddress)                         \
    EP(cuGetProcAddress, 12000, cuGetProcAddress_v2)                      \
    EP(cuGetExportTable, 3000, cuGetExportTable)                          \
    EP(cuDeviceGet, 2000, cuDeviceGet)                                    \
    EP(cuDeviceGetCount, 2000, cuDeviceGetCount)                          \
    EP(cuDeviceGetName, 2000, cuDeviceGetName)                            \
    EP(cuDeviceGetAttribute, 2000, cuDeviceGetAttribute)                  \
    EP(cuDeviceTotalMem, 3020, cuDeviceTotalMem_v2)                       \
    EP(cuDeviceGetUuid, 9020, cuDeviceGetUuid)                            \
    EP(cuDeviceGetUuid, 11040, cuDeviceGetUuid_v2)                        \
    EP(cuDeviceComputeCapability, 2000, cuDeviceComputeCapability)        \
    EP(cuDeviceGetPCIBusId, 4010, cuDeviceGetPCIBusId)                    \
    EP(cuDeviceGetByPCIBusId, 4010, cuDeviceGetByPCIBusId)                \
    EP(cuDevicePrimaryCtxRetain, 7000, cuDevicePrimaryCtxRetain)          \
    EP(cuDevicePrimaryCtxRelease, 7000, cuDevicePrimaryCtxRelease)        \
    EP(cuDevicePrimaryCtxRelease, 11000, cuDevicePrimaryCtxRelease_v2)    \
    EP(cuDevicePrimaryCtxSetFlags, 7000, cuDevicePrimaryCtxSetFlags)      \
    EP(cuDevicePrimaryCtxSetFlags, 11000, cuDevicePrimaryCtxSetFlags_v2)  \
    EP(cuDevicePrimaryCtxGetState, 7000, cuDevicePrimaryCtxGetState)      \
    EP(cuDevicePrimaryCtxReset, 7000, cuDevicePrimaryCtxReset)            \
    EP(cuDevicePrimaryCtxReset, 11000, cuDevicePrimaryCtxReset_v2)        \
    EP(cuCtxCreate, 3020, cuCtxCreate_v2)                                 \
    EP(cuCtxCreate, 11040, cuCtxCreate_v3)                                \
    EP(cuCtxCreate, 12050, cuCtxCreate_v4)                                \
    EP(cuCtxDestroy, 4000, cuCtxDestroy_v2)                               \
    EP(cuCtxPushCurrent, 4000, cuCtxPushCurrent_v2)                       \
    EP(cuCtxPopCurrent, 4000, cuCtxPopCurrent_v2)                         \
    EP(cuCtxSetCurrent, 4000, cuCtxSetCurrent)                            \
    EP(cuCtxGetCurrent, 4000, cuCtxGetCurrent)                            \
    EP(cuCtxGetDevice, 2000, cuCtxGetDevice)                              \
    EP(cuCtxGetDevice, 13000, cuCtxGetDevice_v2)                          \
    EP(cuCtxGetFlags, 7000, cuCtxGetFlags)                                \
    EP(cuCtxGetId, 12000, cuCtxGetId)                                     \
    EP(cuCtxGetApiVersion, 3020, cuCtxGetApiVersion)                      \
    EP(cuCtxGetStreamPriorityRange, 5050, cuCtxGetStreamPriorityRange)    \
    EP(cuCtxGetLimit, 3010, cuCtxGetLimit)                                \
    EP(cuCtxSetLimit, 3010, cuCtxSetLimit)                                \
    EP(cuCtxSynchronize, 2000, cuCtxSynchronize)                          \
    EP(cuCtxSynchronize, 13000, cuCtxSynchronize_v2)                      \
    EP(cuMemAlloc, 3020, cuMemAlloc_v2)                                   \
    EP(cuMemFree, 3020, cuMemFree_v2)                                     \
    EP(cuMemGetInfo, 3020, cuMemGetInfo_v2)                               \
    EP(cuMemGetAddressRange, 3020, cuMemGetAddressRange_v2)               \
    EP(cuMemAllocHost, 3020, cuMemAllocHost_v2)                           \
    EP(cuMemHostAlloc, 2020, cuMemHostAlloc)                              \
    EP(cuMemFreeHost, 2000, cuMemFreeHost)                                \
    EP(cuMemHostGetFlags, 2030, cuMemHostGetFlags)                        \
    EP(cuPointerGetAttribute, 4000, cuPointerGetAttribute)                \
    EP(cuPointerGetAttributes, 7000, cuPointerGetAttributes)              \
    EP(cuMemHostGetDevicePointer, 3020, cuMemHostGetDevicePointer_v2)     \
    EP(cuMemcpy, 4000, cuMemcpy)                                          \
    EP(cuMemcpyAsync, 4000, cuMemcpyAsync)                                \
    EP(cuMemcpyHtoD, 3020, cuMemcpyHtoD_v2)                               \
    EP(cuMemcpyDtoH, 3020, cuMemcpyDtoH_v2)                               \
    EP(cuMemcpyDtoD, 3020, cuMemcpyDtoD_v2)                               \
    EP(cuMemcpyHtoDAsync, 3020, cuMemcpyHtoDAsync_v2)                     \
    EP(cuMemcpyDtoHAsync, 3020, cuMemcpyDtoHAsync_v2)                     \
    EP(cuMemcpyDtoDAsync, 3020, cuMemcpyDtoDAsync_v2)                     \
    EP(cuMemsetD8, 3020, cuMemsetD8_v2)                                   \
    EP(cuMemsetD16, 3020, cuMemsetD16_v2)                                 \
    EP(cuMemsetD32, 3020, cuMemsetD32_v2)                                 \
    EP(cuMemsetD2D8, 3020, cuMemsetD2D8_v2)                               \
    EP(cuMemsetD2D16, 3020, cuMemsetD2D16_v2)                             \
    EP(cuMemsetD2D32, 3020, cuMemsetD2D32_v2)                             \
    EP(cuMemsetD8Async, 3020, cuMemsetD8Async)                            \
    EP(cuMemsetD16Async, 3020, cuMemsetD16Async)                          \
    EP(cuMemsetD32Async, 3020, cuMemsetD32Async)                          \
    EP(cuMemsetD2D8Async, 3020, cuMemsetD2D8Async)                        \
    EP(cuMemsetD2D16Async, 3020, cuMemsetD2D16Async)                      \
    EP(cuMemsetD2D32Async, 3020, cuMemsetD2D32Async)                      \
    EP(cuMemGetAllocationGranularity, 10020, cuMemGetAllocationGranularity) \
    EP(cuMemAddressReserve, 10020, cuMemAddressReserve)                   \
    EP(cuMemAddressFree, 10020, cuMemAddressFree)                         \
    EP(cuMemCreate, 10020, cuMemCreate)                                   \
    EP(cuMemRelease, 10020, cuMemRelease)                                 \
    EP(cuMemMap, 10020, cuMemMap)                                         \
    EP(cuMemUnmap, 10020, cuMemUnmap)                                     \
    EP(cuMemSetAccess, 10020, cuMemSetAccess)                             \
    EP(cuMemGetAccess, 10020, cuMemGetAccess)                             \
    EP(cuMemGetAllocationPropertiesFromHandle, 10020,                     \
       cuMemGetAllocationPropertiesFromHandle)                            \
    EP(cuMemRetainAllocationHandle, 11000, cuMemRetainAllocationHandle)   \
    EP(cuIpcGetMemHandle, 4010, cuIpcGetMemHandle)                        \
    EP(cuIpcOpenMemHandle, 4010, cuIpcOpenMemHandle)                      \
    EP(cuIpcOpenMemHandle, 11000, cuIpcOpenMemHandle_v2)                  \
    EP(cuIpcCloseMemHandle, 4010, cuIpcCloseMemHandle)                    \
    EP(cuIpcGetEventHandle, 4010, cuIpcGetEventHandle)                    \
    EP(cuIpcOpenEventHandle, 4010, cuIpcOpenEventHandle)                  \
    EP(cuTensorMapEncodeTiled, 12000, cuTensorMapEncodeTiled)             \
    EP(cuTensorMapEncodeIm2col, 12000, cuTensorMapEncodeIm2col)           \
    EP(cuTensorMapEncodeIm2colWide, 12080, cuTensorMapEncodeIm2colWide)   \
    EP(cuTensorMapReplaceAddress, 12000, cuTensorMapReplaceAddress)       \
    EP(cuStreamCreate, 2000, cuStreamCreate)                              \
    EP(cuStreamCreateWithPriority, 5050, cuStreamCreateWithPriority)      \
    EP(cuStreamDestroy, 4000, cuStreamDestroy_v2)                         \
    EP(cuStreamSynchronize, 2000, cuStreamSynchronize)                    \
    EP(cuStreamQuery, 2000, cuStreamQuery)                                \
    EP(cuStreamWaitEvent, 3020, cuStreamWaitEvent)                        \
    EP(cuStreamGetFlags, 5050, cuStreamGetFlags)                          \
    EP(cuStreamGetPriority, 5050, cuStreamGetPriority)                    \
    EP(cuStreamGetCtx, 9020, cuStreamGetCtx)                              \
    EP(cuStreamGetId, 12000, cuStreamGetId)                               \
    EP(cuStreamIsCapturing, 10000, cuStreamIsCapturing)                   \
    EP(cuStreamGetCaptureInfo, 10010, cuStreamGetCaptureInfo)             \
    EP(cuStreamGetCaptureInfo, 11030, cuStreamGetCaptureInfo_v2)          \
    EP(cuStreamGetCaptureInfo, 12030, cuStreamGetCaptureInfo_v3)          \
    EP(cuStreamBeginCapture, 10000, cuStreamBeginCapture)                 \
    EP(cuStreamBeginCapture, 10010, cuStreamBeginCapture_v2)              \
    EP(cuStreamEndCapture, 10000, cuStreamEndCapture)                     \
    EP(cuThreadExchangeStreamCaptureMode, 10010, cuThreadExchangeStreamCaptureMode) \
    EP(cuGraphInstantiate, 10000, cuGraphInstantiate)                     \
    EP(cuGraphInstantiate, 11000, cuGraphInstantiate_v2)                  \
    EP(cuGraphInstantiateWithFlags, 11040, cuGraphInstantiateWithFlags)   \
    EP(cuGraphLaunch, 10000, cuGraphLaunch)                               \
    EP(cuGraphUpload, 11010, cuGraphUpload)                               \
    EP(cuGraphDestroy, 10000, cuGraphDestroy)                             \
    EP(cuGraphExecDestroy, 10000, cuGraphExecDestroy)                     \
    EP(cuGraphGetNodes, 10000, cuGraphGetNodes)                           \
    EP(cuEventCreate, 2000, cuEventCreate)                                \
    EP(cuEventDestroy, 4000, cuEventDestroy_v2)                           \
    EP(cuEventRecord, 2000, cuEventRecord)                                \
    EP(cuEventRecordWithFlags, 11010, cuEventRecordWithFlags)             \
    EP(cuEventQuery, 2000, cuEventQuery)                                  \
    EP(cuEventSynchronize, 2000, cuEventSynchronize)                      \
    EP(cuEventElapsedTime, 2000, cuEventElapsedTime)                      \
    EP(cuEventElapsedTime, 12080, cuEventElapsedTime_v2)                  \
    EP(cuModuleLoad, 2000, cuModuleLoad)                                  \
    EP(cuModuleLoadData, 2000, cuModuleLoadData)                          \
    EP(cuModuleLoadDataEx, 2010, cuModuleLoadDataEx)                      \
    EP(cuModuleLoadFatBinary, 2000, cuModuleLoadFatBinary)                \
    EP(cuModuleUnload, 2000, cuModuleUnload)                              \
    EP(cuModuleGetFunction, 2000, cuModuleGetFunction)                    \
    EP(cuModuleGetFunctionCount, 12040, cuModuleGetFunctionCount)         \
    EP(cuModuleEnumerateFunctions, 12040, cuModuleEnumerateFunctions)     \
    EP(cuModuleGetGlobal, 3020, cuModuleGetGlobal_v2)                     \
    EP(cuLibraryLoadData, 12000, cuLibraryLoadData)                       \
    EP(cuLibraryLoadFromFile, 12000, cuLibraryLoadFromFile)               \
    EP(cuLibraryUnload, 12000, cuLibraryUnload)                           \
    EP(cuLibraryGetKernel, 12000, cuLibraryGetKernel)                     \
    EP(cuLibraryGetKernelCount, 12040, cuLibraryGetKernelCount)           \
    EP(cuLibraryEnumerateKernels, 12040, cuLibraryEnumerateKernels)       \
    EP(cuLibraryGetModule, 12000, cuLibraryGetModule)                     \
    EP(cuLibraryGetGlobal, 12000, cuLibraryGetGlobal)                     \
    EP(cuKernelGetFunction, 12000, cuKernelGetFunction)                   \
    EP(cuKernelGetAttribute, 12000, cuKernelGetAttribute)                 \
    EP(cuKernelSetAttribute, 12000, cuKernelSetAttribute)                 \
    EP(cuKernelSetCacheConfig, 12000, cuKernelSetCacheConfig)             \
    EP(cuKernelGetParamInfo, 12040, cuKernelGetParamInfo)                 \
    EP(cuFuncGetAttribute, 2020, cuFuncGetAttribute)                      \
    EP(cuFuncSetAttribute, 9000, cuFuncSetAttribute)                      \
    EP(cuFuncSetCacheConfig, 3000, cuFuncSetCacheConfig)                  \
    EP(cuFuncGetParamInfo, 12040, cuFuncGetParamInfo)                     \
    EP(cuOccupancyMaxActiveBlocksPerMultiprocessor, 6050,                 \
       cuOccupancyMaxActiveBlocksPerMultiprocessor)                       \
    EP(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags, 7000,        \
       cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags)              \
    EP(cuLaunchKernel, 4000, cuLaunchKernel)                              \
    EP(cuLaunchHostFunc, 10000, cuLaunchHostFunc)                         \
    EP(cuStreamAddCallback, 5000, cuStreamAddCallback)                    \
    EP(cuLaunchKernelEx, 11060, cuLaunchKernelEx)                         \
    EP(cuLaunchCooperativeKernel, 9000, cuLaunchCooperativeKernel)        \
    EP(cuModuleGetLoadingMode, 11070, cuModuleGetLoadingMode)            \
    EP(cuOccupancyAvailableDynamicSMemPerBlock, 10020,                    \
       cuOccupancyAvailableDynamicSMemPerBlock)                           \
    EP(cuOccupancyMaxActiveClusters, 11070, cuOccupancyMaxActiveClusters) \
    EP(cuProfilerStart, 4000, cuProfilerStart)                            \
    EP(cuProfilerStop, 4000, cuProfilerStop)
