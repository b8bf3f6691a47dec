// The PUT of the sef-vmss remediation: the scale set's identities and its model's applications as
// remediation-vmss.bicep worked them out.

param resourceName string
param location string
param identity object
param applications array

resource vmss 'Microsoft.Compute/virtualMachineScaleSets@2025-04-01' = {
  name: resourceName
  location: location
  identity: identity
  properties: {
    virtualMachineProfile: {
      applicationProfile: {
        galleryApplications: applications
      }
    }
  }
}
