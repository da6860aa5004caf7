"""TensorBoard spawner: workflow name → its tensorboard artifacts → a TensorBoard Deployment + Service."""
