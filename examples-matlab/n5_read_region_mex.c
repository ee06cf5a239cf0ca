/*
 * n5_read_region_mex.c: read part of an N5 dataset into MATLAB or GNU Octave.
 *
 *   data = n5_read_region_mex(root, dataset, offset, shape)
 *   data = n5_read_region_mex(root, dataset)          % the whole dataset
 *
 * root     the container's directory (char); opened read-only.
 * dataset  the dataset's path in the container (char), e.g. 'raw/s0'.
 * offset   0-based start of the region, one value per dimension, in N5's
 *          order (the order of "dimensions" in attributes.json). Any
 *          numeric class with non-negative whole values.
 * shape    the region's extent per dimension (same rules).
 * data     a new array of the dataset's class: uint8, uint16, uint32,
 *          uint64, int8, int16, int32, int64, single or double, of size
 *          shape (a shape of one value gives a column vector).
 *
 * N5's dimension order is MATLAB's column-major order: N5 dimension 0 (x,
 * the fastest-varying) is MATLAB's first index. So the array needs no
 * permute and libn5 decodes straight into the mxArray's memory (no copy).
 * data(i, j, k) is the element at N5 coordinates
 * (offset(1) + i - 1, offset(2) + j - 1, offset(3) + k - 1).
 *
 * Errors are raised with an identifier: "n5:N5_ERR_NOT_FOUND",
 * "n5:N5_ERR_OUT_OF_BOUNDS", ... (the name of libn5's status code, with
 * libn5's message naming the function and path) or "n5:badArgument",
 * "n5:unsupportedType" for problems found here.
 *
 * Build (PREFIX is where libn5 is installed; in the libn5 build tree use
 * include/ and the folder holding libn5.so):
 *   GNU Octave:
 *     mkoctfile --mex n5_read_region_mex.c -IPREFIX/include -LPREFIX/lib -ln5 \
 *               -Wl,-rpath,PREFIX/lib
 *   MATLAB:
 *     mex n5_read_region_mex.c -IPREFIX/include -LPREFIX/lib -ln5 ...
 *         LDFLAGS='$LDFLAGS -Wl,-rpath,PREFIX/lib'
 * The rpath lets the MEX file find libn5.so without LD_LIBRARY_PATH.
 * tests/ffi/CMakeLists.txt builds it with mkoctfile and runs
 * tests/ffi/test_mex.m under octave-cli (ctest label "mex").
 */
#include "mex.h"

#include <n5.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The MATLAB class that holds each N5 dtype. */
static mxClassID class_of(n5_dtype dtype)
{
    switch (dtype) {
    case N5_DTYPE_UINT8: return mxUINT8_CLASS;
    case N5_DTYPE_UINT16: return mxUINT16_CLASS;
    case N5_DTYPE_UINT32: return mxUINT32_CLASS;
    case N5_DTYPE_UINT64: return mxUINT64_CLASS;
    case N5_DTYPE_INT8: return mxINT8_CLASS;
    case N5_DTYPE_INT16: return mxINT16_CLASS;
    case N5_DTYPE_INT32: return mxINT32_CLASS;
    case N5_DTYPE_INT64: return mxINT64_CLASS;
    case N5_DTYPE_FLOAT32: return mxSINGLE_CLASS;
    case N5_DTYPE_FLOAT64: return mxDOUBLE_CLASS;
    default: return mxUNKNOWN_CLASS; /* string and object datasets */
    }
}

/* mexErrMsgIdAndTxt does not return, so the handles are freed first (the
 * MATLAB memory manager frees mxArrays and mxMalloc'd memory by itself). */
static void fail(n5_dataset *d, n5_container *c, const char *id, const char *message)
{
    char text[2048];
    snprintf(text, sizeof text, "%s", message);
    n5_dataset_free(d);
    n5_container_free(c);
    mexErrMsgIdAndTxt(id, "%s", text);
}

/* Raises libn5's last error. The _free functions leave it in place. */
static void fail_n5(n5_dataset *d, n5_container *c)
{
    char id[64];
    snprintf(id, sizeof id, "n5:%s", n5_status_name(n5_last_error_code()));
    fail(d, c, id, n5_last_error_message());
}

/* Element i of a real numeric array as a non-negative whole number; 0 if it
 * is not one. */
static int index_value(const mxArray *a, size_t i, uint64_t *out)
{
    const void *p = mxGetData(a);
    double v;
    switch (mxGetClassID(a)) {
    case mxDOUBLE_CLASS: v = ((const double *)p)[i]; break;
    case mxSINGLE_CLASS: v = ((const float *)p)[i]; break;
    case mxINT8_CLASS: v = ((const int8_T *)p)[i]; break;
    case mxUINT8_CLASS: v = ((const uint8_T *)p)[i]; break;
    case mxINT16_CLASS: v = ((const int16_T *)p)[i]; break;
    case mxUINT16_CLASS: v = ((const uint16_T *)p)[i]; break;
    case mxINT32_CLASS: v = ((const int32_T *)p)[i]; break;
    case mxUINT32_CLASS: v = ((const uint32_T *)p)[i]; break;
    case mxINT64_CLASS:
        if (((const int64_T *)p)[i] < 0)
            return 0;
        *out = (uint64_t)((const int64_T *)p)[i];
        return 1;
    case mxUINT64_CLASS: *out = ((const uint64_T *)p)[i]; return 1;
    default: return 0;
    }
    if (!(v >= 0.0 && v <= 9007199254740992.0 && v == floor(v))) /* 2^53 */
        return 0;
    *out = (uint64_t)v;
    return 1;
}

/* Reads argument arg (offset or shape) into out[ndim]. */
static void get_indices(const mxArray *arg, const char *name, size_t ndim, uint64_t *out,
                        n5_dataset *d, n5_container *c)
{
    char message[256];
    size_t i;
    if (!mxIsNumeric(arg) || mxIsComplex(arg) || mxGetNumberOfElements(arg) != ndim) {
        snprintf(message, sizeof message,
                 "%s must be a real numeric vector of %u values (the dataset's rank)", name,
                 (unsigned)ndim);
        fail(d, c, "n5:badArgument", message);
    }
    for (i = 0; i < ndim; i++)
        if (!index_value(arg, i, &out[i])) {
            snprintf(message, sizeof message,
                     "%s(%u) must be a non-negative whole number", name, (unsigned)(i + 1));
            fail(d, c, "n5:badArgument", message);
        }
}

void mexFunction(int nlhs, mxArray *plhs[], int nrhs, const mxArray *prhs[])
{
    char *root, *path;
    n5_container *c = NULL;
    n5_dataset *d = NULL;
    n5_dtype dtype = N5_DTYPE_INVALID;
    size_t ndim = 0, i, count = 1, elem_size;
    uint64_t offset[64], shape[64]; /* N5 allows at most 64 dimensions */
    mwSize dims[64];
    mxClassID class_id;
    mxArray *data;

    if ((nrhs != 2 && nrhs != 4) || nlhs > 1)
        mexErrMsgIdAndTxt("n5:badArgument",
                          "usage: data = n5_read_region_mex(root, dataset[, offset, shape])");
    if (!mxIsChar(prhs[0]) || !mxIsChar(prhs[1]))
        mexErrMsgIdAndTxt("n5:badArgument", "root and dataset must be character vectors");

    /* libn5 takes UTF-8 paths. */
#ifdef HAVE_OCTAVE
    root = mxArrayToString(prhs[0]); /* Octave's char arrays hold UTF-8 */
    path = mxArrayToString(prhs[1]);
#else
    root = mxArrayToUTF8String(prhs[0]);
    path = mxArrayToUTF8String(prhs[1]);
#endif
    if (root == NULL || path == NULL)
        mexErrMsgIdAndTxt("n5:badArgument", "root and dataset must be character vectors");
    c = n5_container_open(root, N5_MODE_READ, NULL);
    mxFree(root);
    if (c == NULL)
        fail_n5(NULL, NULL);
    d = n5_dataset_open(c, path);
    mxFree(path);
    if (d == NULL)
        fail_n5(NULL, c);

    if (n5_dataset_ndim(d, &ndim) != N5_OK || n5_dataset_dtype(d, &dtype) != N5_OK)
        fail_n5(d, c);
    class_id = class_of(dtype);
    elem_size = n5_dtype_size(dtype);
    if (class_id == mxUNKNOWN_CLASS) {
        char message[128];
        snprintf(message, sizeof message, "datasets of type %s cannot be read as an array",
                 n5_dtype_name(dtype));
        fail(d, c, "n5:unsupportedType", message);
    }
    if (ndim > 64)
        fail(d, c, "n5:badArgument", "more than 64 dimensions");

    if (nrhs == 4) {
        get_indices(prhs[2], "offset", ndim, offset, d, c);
        get_indices(prhs[3], "shape", ndim, shape, d, c);
    } else {
        memset(offset, 0, sizeof offset);
        if (n5_dataset_dimensions(d, ndim, shape) != N5_OK)
            fail_n5(d, c);
    }

    /* The array: dimensions as in N5; MATLAB arrays have at least two. */
    for (i = 0; i < ndim; i++) {
        if (shape[i] > (uint64_t)(size_t)-1 ||
            (shape[i] != 0 && count > (size_t)-1 / elem_size / shape[i]))
            fail(d, c, "n5:badArgument", "the region is too large for memory");
        dims[i] = (mwSize)shape[i];
        count *= (size_t)shape[i];
    }
    if (ndim == 1)
        dims[1] = 1;
    data = mxCreateNumericArray(ndim < 2 ? 2 : ndim, dims, class_id, mxREAL);

    /* Decode straight into the array's memory: libn5's buffer layout
     * (dimension 0 fastest) is MATLAB's. Regions past the dataset's end
     * fail with N5_ERR_OUT_OF_BOUNDS; blocks never written read as 0. */
    if (n5_region_read(d, ndim, offset, shape, dtype, mxGetData(data), count * elem_size) !=
        N5_OK)
        fail_n5(d, c);

    n5_dataset_free(d);
    n5_container_free(c);
    plhs[0] = data;
}
