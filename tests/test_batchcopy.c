#include "ds_test.h"
Test(batchcopy, placeholder) {}
