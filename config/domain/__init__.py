"""What the configuration is about, as models: the GPU physics and its calibration on published runs
(physics, calibration), the chat workload (workload), on-demand prices and what a fleet costs (prices, cost),
and the audiences' and releases' local-time calendars (release_calendar). The environment files in
config/environments/ are the configuration; these modules read and derive from them."""
