import sys

from device_check.run import main

sys.exit(main())
